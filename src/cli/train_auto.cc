// SPDX-License-Identifier: MIT
#include "cli/train_auto.h"

#include <cstdio>

#include "core/check.h"
#include "core/duration.h"
#include "dist/comm.h"
#include "experiment/planner.h"

namespace nt::cli {

void describe_auto_preset(CLI::App* train) {
  CLI::Option* o = train->get_option("--preset");
  o->description(o->get_description() + " | auto (the planner's choice for --time-budget; nanotrain plan)");
}

void resolve_auto_preset(const CLI::App& train, TrainConfig& cfg) {
  if (cfg.shape.preset != "auto") return;
  if (train.get_option("--time-budget")->count() == 0 || cfg.steps > 0)
    fail("--preset auto: needs --time-budget (the planner picks the model for a training-time budget, not for "
         "--steps)");
  for (const char* flag : {"--depth", "--d-model", "--n-head", "--n-kv-head", "--head-dim", "--batch-size",
                           "--total-batch-tokens"})
    if (train.get_option(flag)->count() > 0)
      fail("%s: cannot be combined with --preset auto (the planner chooses the shape and batch)", flag);
  if (dist::world().size() > 1)
    fail("--preset auto: over several ranks, plan once with nanotrain plan and give every rank its flags");
  experiment::PlannerOptions opt;
  const auto budget = parse_duration(cfg.time_budget);
  if (!budget) fail("--time-budget %s: expected a positive duration such as 90s, 5m, 1h", cfg.time_budget.c_str());
  opt.budget_s = *budget;
  opt.budget_flag = "--time-budget";
  if (!cfg.quiet) opt.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const experiment::ScalingLaw law =
      experiment::scaling_law_from_json(experiment::default_scaling_law_json(), "shipped coefficients");
  TrainConfig base = cfg;
  base.shape.preset = "cpu";
  const experiment::PlanReport r = experiment::plan_training(base, law, "shipped", opt);
  experiment::apply_plan(cfg, r.chosen());
  if (!cfg.quiet) std::printf("%s", experiment::plan_report_text(r).c_str()), std::fflush(stdout);
}

}  // namespace nt::cli
