// SPDX-License-Identifier: MIT
#include "cli/train_auto.h"

#include <cstdio>

#include "experiment/auto_preset.h"

namespace nt::cli {

void describe_auto_preset(CLI::App* train) {
  CLI::Option* o = train->get_option("--preset");
  o->description(o->get_description() + " | auto (the planner's choice for --time-budget; nanotrain plan)");
}

void resolve_auto_preset(const CLI::App& train, TrainConfig& cfg) {
  if (cfg.shape.preset != "auto") return;
  std::vector<std::string> given;
  for (const std::string& flag : experiment::auto_preset_flags())
    if (train.get_option(flag)->count() > 0) given.push_back(flag);
  experiment::check_auto_preset(cfg, train.get_option("--time-budget")->count() > 0, given, "");
  std::function<void(const std::string&)> progress;
  if (!cfg.quiet) progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const experiment::PlanReport r = experiment::plan_auto_preset(cfg, progress);
  if (!cfg.quiet) std::printf("%s", experiment::plan_report_text(r).c_str()), std::fflush(stdout);
}

}  // namespace nt::cli
