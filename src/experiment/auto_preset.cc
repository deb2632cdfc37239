// SPDX-License-Identifier: MIT
#include "experiment/auto_preset.h"

#include <algorithm>

#include "core/check.h"
#include "core/duration.h"
#include "dist/comm.h"

namespace nt::experiment {

const std::vector<std::string>& auto_preset_flags() {
  static const std::vector<std::string> flags = {"--depth",    "--d-model",    "--n-head",
                                                 "--n-kv-head", "--head-dim",  "--batch-size",
                                                 "--total-batch-tokens"};
  return flags;
}

void check_auto_preset(const TrainConfig& cfg, bool budget_given, const std::vector<std::string>& given,
                       const std::string& where) {
  if (!budget_given || cfg.steps > 0)
    fail("%s--preset auto: needs --time-budget (the planner picks the model for a training-time budget, not for "
         "--steps)",
         where.c_str());
  for (const std::string& flag : auto_preset_flags())
    if (std::find(given.begin(), given.end(), flag) != given.end())
      fail("%s%s: cannot be combined with --preset auto (the planner chooses the shape and batch)", where.c_str(),
           flag.c_str());
  if (dist::world().size() > 1)
    fail("%s--preset auto: over several ranks, plan once with nanotrain plan and give every rank its flags",
         where.c_str());
}

PlanReport plan_auto_preset(TrainConfig& cfg, const std::function<void(const std::string&)>& progress) {
  PlannerOptions opt;
  const auto budget = parse_duration(cfg.time_budget);
  if (!budget) fail("--time-budget %s: expected a positive duration such as 90s, 5m, 1h", cfg.time_budget.c_str());
  opt.budget_s = *budget;
  opt.budget_flag = "--time-budget";
  opt.progress = progress;
  const ScalingLaw law = scaling_law_from_json(default_scaling_law_json(), "shipped coefficients");
  TrainConfig base = cfg;
  base.shape.preset = "cpu";
  PlanReport r = plan_training(base, law, "shipped", opt);
  apply_plan(cfg, r.chosen());
  return r;
}

}  // namespace nt::experiment
