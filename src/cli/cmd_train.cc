// SPDX-License-Identifier: MIT
// `nanotrain train`: its options are TrainConfig's fields (train/train_config.h).
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "cli/train_auto.h"
#include "core/check.h"
#include "dist/comm.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace nt::cli {

namespace {

void print_summary(const TrainSummary& s) {
  std::printf("val_bpb %.4f | steps %lld | %.0f tokens in %.1fs (%.0f tok/s, MFU %.1f%%) | overshoot %+.3fs\n",
              s.val_bpb, (long long)s.steps, double(s.tokens_trained), s.train_seconds, s.tokens_per_second,
              100 * s.mfu, s.budget_overshoot_seconds);
  if (s.core) std::printf("CORE %.4f over %zu task(s) (%.1fs of CORE evaluations, not charged)\n", *s.core,
                          s.core_tasks.size(), s.core_seconds);
  if (!s.sample.empty()) std::printf("sample: %s\n", s.sample.c_str());
  std::printf("run folder: %s\n", s.run_dir.c_str());
}

// With --resume the run keeps its own settings: only the per-invocation flags may be given.
void check_resume_flags(const CLI::App& c, TrainConfig& cfg) {
  const std::vector<std::string> allowed = resume_flags(cfg);
  std::string others;
  for (const auto& flag : allowed)
    if (flag != "--resume") others += (others.empty() ? "" : " and ") + flag;
  for (const CLI::Option* o : c.get_options())
    if (o->count() > 0 && std::find(allowed.begin(), allowed.end(), o->get_name()) == allowed.end())
      fail("%s: cannot be combined with --resume (a resumed run keeps its own settings; only %s may be given)",
           o->get_name().c_str(), others.c_str());
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto cfg = std::make_shared<TrainConfig>();
  auto* c = app.add_subcommand("train", "Train a GPT from scratch under a wall-clock budget and report val_bpb");
  add_field_options(c, *cfg);
  describe_auto_preset(c);
  c->callback([cfg, c] {
    if (!cfg->resume.empty()) check_resume_flags(*c, *cfg);
    resolve_auto_preset(*c, *cfg);
    try {
      const TrainSummary s = run_training(*cfg);
      if (dist::world().rank() == 0) print_summary(s);  // over several ranks, rank 0 speaks
    } catch (const Interrupted& stop) {
      if (dist::world().rank() == 0) std::fprintf(stderr, "nanotrain: %s\n", stop.message.c_str());
      throw ExitCode{128 + stop.signal};
    }
  });
}

}  // namespace nt::cli
