// SPDX-License-Identifier: MIT
// --preset auto, for `train` and for the runs of a sweep: the planner (planner.h) picks the shape
// and batch for the run's --time-budget, and they become ordinary settings, so the run's
// config.json records a run that repeats without the planner.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "experiment/planner.h"
#include "train/train_config.h"

namespace nt::experiment {

// The flags whose values --preset auto chooses; a run that sets any of them too is refused.
const std::vector<std::string>& auto_preset_flags();

// Refuses what --preset auto cannot plan: no time budget given or --steps, a flag of
// auto_preset_flags() among `given` (the flags the run set), several ranks. Errors start with
// `where` ("" for train, "run NAME: " for a sweep's run) and name the flag.
void check_auto_preset(const TrainConfig& cfg, bool budget_given, const std::vector<std::string>& given,
                       const std::string& where);

// Plans for cfg's time budget with the shipped scaling law (shapes timed now, from the `cpu`
// preset's other settings) and writes the choice into cfg. progress: a line per shape timed
// (may be empty).
PlanReport plan_auto_preset(TrainConfig& cfg, const std::function<void(const std::string&)>& progress);

}  // namespace nt::experiment
