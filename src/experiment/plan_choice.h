// SPDX-License-Identifier: MIT
// The planner's decision, apart from any measurement: given each candidate's predicted step time,
// how many tokens it trains in the budget and the val_bpb the scaling law predicts for it; the
// choice is the lowest prediction among the candidates that fit (docs/EXPERIMENTS.md, "Planner").
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "experiment/scaling_law.h"

namespace nt::experiment {

// One shape and batch the planner considers.
struct PlanCandidate {
  int depth = 0, d_model = 0, head_dim = 64, seq_len = 256, batch_size = 0;
  int64_t params = 0, params_matmul = 0;  // total; outside the embedding (the law's N)
  int64_t step_tokens = 0;                // batch_size x seq_len
  size_t memory_bytes = 0;
  bool fits_memory = true;
  double step_seconds = 0;  // predicted training step (0: not timed)
  std::string not_timed;    // why it was not timed (with step_seconds 0)
};

struct PlanPrediction {
  int64_t steps = 0;  // whole steps in the budget
  double tokens = 0, tokens_per_second = 0, val_bpb = NAN;
  double epochs = 0;  // tokens over the training data's (0: its size unknown)
  std::string excluded;  // why the candidate cannot be chosen ("" when it can)
};

struct PlanRule {
  double budget_s = 0;      // training time, as --time-budget counts it
  int64_t min_steps = 300;  // fewer optimizer steps than this: excluded (too few updates for the schedule)
  std::string budget_flag = "--budget";  // named in the errors
  double unique_tokens = 0;  // tokens in the training data, for the law's repetition term (0: unknown)
};

struct PlanChoice {
  std::vector<PlanPrediction> predictions;  // one per candidate, in order
  size_t best = 0;
  std::string why;  // one sentence
};

// The trainer starts a step only while the budget holds it, so a candidate trains
// floor(budget / step) steps of step_tokens each. Excluded: not measured, over the memory, fewer
// than min_steps steps. The choice is the lowest predicted val_bpb; a tie goes to the smaller
// model, then the smaller batch. Fails (nt::fail, naming the budget's flag) when no candidate is left.
PlanChoice choose_plan(const std::vector<PlanCandidate>& candidates, const ScalingLaw& law, const PlanRule& rule);

}  // namespace nt::experiment
