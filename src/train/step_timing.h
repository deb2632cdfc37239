// SPDX-License-Identifier: MIT
// Whole training steps timed on fixed synthetic tokens (speed does not depend on the data): what
// `nanotrain bench` reports and what the planner predicts a budget's tokens from.
#pragma once

#include <functional>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/precision.h"
#include "model/config.h"
#include "optim/optim_config.h"

namespace nt {

struct TimedSteps {
  std::vector<double> forward_backward_s, optimizer_s;  // one entry per timed step
  std::vector<double> step_s() const;                   // their sums
};

// One warm-up step, then `steps` timed ones of `batch` sequences of c.seq_len tokens;
// `after_warmup` (if any) runs between them (e.g. to switch the profiler on).
TimedSteps time_training_steps(const ModelConfig& c, const KernelTable& k, Precision prec, const OptimConfig& oc,
                               int batch, int steps, const std::function<void()>& after_warmup = {});

double median(std::vector<double> v);

}  // namespace nt
