// SPDX-License-Identifier: MIT
// `nanotrain sweep`: a grid, named variants and seeds expanded into runs under one folder, run one
// after another in this process (experiment/sweep_runner.h); resumable. With --parallel-hosts, or
// started as several processes by mpirun, the processes share the runs, one run per process.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "cli/train_flags.h"
#include "core/check.h"
#include "core/files.h"
#include "dist/comm.h"
#include "experiment/auto_preset.h"
#include "experiment/leaderboard.h"
#include "experiment/leaderboard_format.h"
#include "experiment/run_estimate.h"
#include "experiment/sweep_runner.h"
#include "train/train_plan.h"
#include "train/trainer.h"

namespace nt::cli {

namespace {

using namespace nt::experiment;

struct SweepFlags {
  std::string out, grid, file;
  std::vector<std::string> variants;
  int seeds = 0;
  bool dry_run = false, json = false, verbose = false, quiet = false, parallel = false;
};

// The runs: from the flags, or (nothing but --out given) from the folder's stored plan.
std::vector<SweepRun> plan_runs(const SweepFlags& f, const CLI::App& c, SweepSpec& spec) {
  std::vector<std::string> names;  // the train flags this command took (the sweep's own --quiet is not one)
  for (const std::string& n : train_flag_names())
    if (std::find(kSweepOwnedFlags.begin(), kSweepOwnedFlags.end(), n) == kSweepOwnedFlags.end()) names.push_back(n);
  const std::vector<std::string> shared = given_args(c, names);
  const std::string stored = plan_path(f.out);
  if (f.grid.empty() && f.variants.empty() && f.file.empty() && f.seeds == 0 && shared.empty()) {
    if (!std::filesystem::exists(stored))
      fail("--out %s: no sweep there yet; give --grid, --variant, --file or --seeds (and train flags)", f.out.c_str());
    const nlohmann::json plan = nlohmann::json::parse(read_file(stored), nullptr, false);
    const std::vector<SweepRun> runs = runs_from_plan(plan, stored);
    spec.seeds = plan.value("seeds", 0);
    return runs;
  }
  if (!f.file.empty()) spec = read_sweep_file(f.file);
  SweepSpec given;
  given.grid = parse_grid(f.grid);
  for (const std::string& v : f.variants) given.variants.push_back(parse_variant(v));
  given.seeds = f.seeds;
  given.shared_args = shared;
  merge_specs(spec, given);
  for (const std::string& owned : kSweepOwnedFlags) {
    const std::string key = owned.substr(2);
    for (const GridAxis& a : spec.grid)
      if (a.key == key) fail("--grid %s: the sweep sets %s itself", key.c_str(), owned.c_str());
    for (const Variant& v : spec.variants)
      for (const std::string& k : flags_in(v.args))
        if (k == key) fail("--variant %s: the sweep sets %s itself", v.name.c_str(), owned.c_str());
    for (const std::string& k : flags_in(spec.shared_args))
      if (k == key) fail("%s: the sweep sets it itself", owned.c_str());
  }
  const TrainConfig base = train_config_from_args(spec.shared_args, "the shared train flags");
  std::vector<SweepRun> runs;
  for (PlannedRun& p : expand_sweep(spec, base.seed)) {
    std::vector<std::string> args = spec.shared_args;
    args.insert(args.end(), p.args.begin(), p.args.end());
    TrainConfig cfg = train_config_from_args(args, "run " + p.name);
    if (cfg.shape.preset == "auto") {
      std::vector<std::string> given;
      for (const std::string& k : flags_in(args)) given.push_back("--" + k);
      const bool budget = std::find(given.begin(), given.end(), "--time-budget") != given.end();
      check_auto_preset(cfg, budget, given, "run " + p.name + ": ");
    }
    runs.push_back({std::move(p), std::move(cfg)});
  }
  return runs;
}

void print_dry_run(const std::vector<SweepRun>& runs, const SweepFlags& f) {
  std::vector<TrainConfig> cfgs;
  for (const SweepRun& r : runs) cfgs.push_back(r.cfg);
  const std::vector<RunEstimate> est = estimate_runs(cfgs);
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    nlohmann::json j = {{"name", runs[i].plan.name},
                        {"args", runs[i].plan.args},
                        {"params", est[i].params},
                        {"memory_bytes", est[i].memory_bytes},
                        {"flops_per_token", est[i].flops_per_token},
                        {"step_tokens", est[i].step_tokens}};
    if (runs[i].cfg.shape.preset == "auto")
      j["auto_preset"] = true;  // planned when it starts: no estimate yet
    else if (!est[i].error.empty())
      j["error"] = est[i].error;
    list.push_back(j);
  }
  if (f.json) {
    std::printf("%s\n",
                nlohmann::json{{"schema", "nanotrain-sweep-plan/1"}, {"out", f.out}, {"runs", list}}.dump(2).c_str());
    return;
  }
  std::printf("%zu runs into %s (tokens/s is not predicted: it needs a measurement on this machine)\n", runs.size(),
              f.out.c_str());
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string flags;
    for (const std::string& a : runs[i].plan.args) flags += " " + a;
    if (runs[i].cfg.shape.preset == "auto")
      std::printf("  %s:%s | shape and batch chosen by the planner when the run starts\n", runs[i].plan.name.c_str(),
                  flags.c_str());
    else if (!est[i].error.empty())
      std::printf("  %s:%s | cannot plan: %s\n", runs[i].plan.name.c_str(), flags.c_str(), est[i].error.c_str());
    else
      std::printf("  %s:%s | params %s | memory %s | %s FLOP/token | %lld tokens a step\n", runs[i].plan.name.c_str(),
                  flags.c_str(), si_count(double(est[i].params)).c_str(),
                  human_bytes(double(est[i].memory_bytes)).c_str(), si_count(est[i].flops_per_token).c_str(),
                  (long long)est[i].step_tokens);
  }
}

void run(const SweepFlags& f, const CLI::App& c) {
  SweepSpec spec;
  const std::vector<SweepRun> runs = plan_runs(f, c, spec);
  if (f.dry_run) return print_dry_run(runs, f);
  // Ranks of an MPI launch each train their own runs: one run per host, not one run over hosts.
  const bool launched = dist::launched_processes() > 1;
  if (launched) dist::run_alone();
  SweepOptions opt{f.out, f.verbose, f.quiet, f.parallel || launched};
  try {
    const SweepStatus status = run_sweep(runs, sweep_plan_json(spec, runs), opt);
    if (f.json) {
      std::printf("%s\n", status.to_json().dump(2).c_str());
    } else if (!f.quiet) {
      LeaderOptions lo;
      std::printf("%s", leaderboard_text(make_leaderboard(load_runs({f.out}), lo)).c_str());
      const int elsewhere = status.count("running");
      std::printf("sweep %s: %d done, %d failed%s (status: %s)\n", f.out.c_str(), status.count("done"),
                  status.count("failed"),
                  elsewhere > 0 ? strf(", %d running in other sweep processes", elsewhere).c_str() : "",
                  status_path(f.out).c_str());
    }
    if (status.count("failed") > 0) throw ExitCode{3};
  } catch (const Interrupted& stop) {
    std::fprintf(stderr, "nanotrain: %s; continue the sweep with: nanotrain sweep --out %s\n", stop.message.c_str(),
                 f.out.c_str());
    throw ExitCode{128 + stop.signal};
  }
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto f = std::make_shared<SweepFlags>();
  auto shared = std::make_shared<TrainConfig>();
  auto* c = app.add_subcommand(
      "sweep",
      "Run a set of training runs (a grid of flag values, named variants, seeds) one after another, each a run folder "
      "under --out. Started again on the same --out it skips finished runs and resumes an interrupted one. Train "
      "flags given here are shared by every run. Exit codes: 0 every run done, 1 bad input, 2 usage, 3 some runs "
      "failed (the others ran), 130/143 stopped by SIGINT/SIGTERM (continue by running it again)");
  c->add_option("--out", f->out, "Sweep folder: SWEEP/sweep.json (the plan), SWEEP/status.json, a run folder per run")
      ->required();
  c->add_option("--grid", f->grid, "Flag values to combine: 'depth=3,4 lr-matrix=0.01,0.02' (flags without --)");
  c->add_option("--variant", f->variants,
                "A named set of flags, repeatable: --variant wide:'--d-model 512 --n-head 8'");
  c->add_option("--file", f->file,
                "Sweep file, JSON or TOML (*.toml): grid, variants, seeds, flags; see docs/EXPERIMENTS.md");
  c->add_option("--seeds", f->seeds, "Repeats of every setting, with seeds counting up from --seed")
      ->check(CLI::Range(1, 1000));
  c->add_flag("--dry-run", f->dry_run,
              "Print the plan with each run's parameters, memory and FLOPs per token (tokens/s is not predicted)");
  c->add_flag("--json", f->json, "Print the final status (or with --dry-run the plan) as JSON");
  c->add_flag("--verbose", f->verbose, "Show each run's own progress lines");
  c->add_flag("--quiet", f->quiet, "No line per run");
  c->add_flag("--parallel-hosts", f->parallel,
              "Share --out with other sweep processes (the same command on other hosts over a shared file system): "
              "each takes the next run no other process holds. Implied when mpirun starts several processes");
  OptionStyle style;
  style.skip = kSweepOwnedFlags;
  add_field_options(c, *shared, style);
  c->callback([f, c, shared] { run(*f, *c); });  // shared: the options write into it
}

}  // namespace nt::cli
