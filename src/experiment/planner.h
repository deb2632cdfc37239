// SPDX-License-Identifier: MIT
// `nanotrain plan`: which model to train in a time budget on this machine. Candidate shapes around
// the presets are planned as the trainer plans them (parameters, memory), a few training steps of
// each are timed on this machine, and the choice follows the scaling law (plan_choice.h).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiment/plan_choice.h"
#include "experiment/scaling_law.h"
#include "train/train_config.h"

namespace nt::experiment {

struct PlannerOptions {
  double budget_s = 0;
  std::string budget_flag = "--budget";  // the flag that gave it, for errors
  int64_t min_steps = 300;
  int timed_steps = 2;  // after one warm-up step, per shape
  double time_limit_s = 60;  // a shape whose timing would end past this is not timed
  std::vector<int> batches = {8, 16, 32};
  std::vector<std::pair<int, int>> shapes;  // (depth, d_model); empty: plan_shapes()
  std::function<void(const std::string&)> progress;  // one line per shape measured (may be empty)
};

struct PlanReport {
  std::vector<PlanCandidate> candidates;
  PlanChoice choice;
  ScalingLaw law;
  std::string law_source;  // the coefficients file, or "shipped"
  std::string machine, kernels, dtype;
  double budget_s = 0, measure_seconds = 0;
  double unique_tokens = 0;  // tokens in the training data (one epoch)
  int64_t min_steps = 0;
  int threads = 0;
  // The share of their cores the threads had while shapes were timed (CPU time over wall time x
  // threads): well below 1 on a machine busy with other work, whose timings (and choice) are off.
  double core_share = 1;
  bool machine_was_busy() const;
  std::string busy_note() const;  // "" unless machine_was_busy()
  const PlanCandidate& chosen() const { return candidates[choice.best]; }
};

// The depth x width shapes considered by default (d_model a multiple of 64, head_dim 64), smallest
// first.
std::vector<std::pair<int, int>> plan_shapes();
// "2x128,4x256": DEPTHxD_MODEL pairs, d_model a multiple of 64; errors name --shapes.
std::vector<std::pair<int, int>> parse_plan_shapes(const std::string& text);

// Measures and chooses. `base` gives the data, device, dtype, threads, sequence length and model
// variants; its preset, depth, width and batch are the planner's to choose. Fails like
// choose_plan when no candidate fits the budget.
PlanReport plan_training(const TrainConfig& base, const ScalingLaw& law, const std::string& law_source,
                         const PlannerOptions& opt);

// The choice as train flags ("--preset=cpu", "--depth=4", ...), and applied to a configuration.
std::vector<std::string> plan_train_args(const PlanCandidate& c);
void apply_plan(TrainConfig& cfg, const PlanCandidate& c);

// `plan --json` (schema "nanotrain-plan/1") and the table `plan` prints.
nlohmann::json plan_report_json(const PlanReport& r);
std::string plan_report_text(const PlanReport& r);

}  // namespace nt::experiment
