// SPDX-License-Identifier: MIT
// Whole training steps timed on fixed synthetic tokens (speed does not depend on the data): what
// `nanotrain bench` reports and what the planner predicts a budget's tokens from.
#pragma once

#include <functional>
#include <vector>

#include "dist/comm.h"
#include "kernels/kernels.h"
#include "kernels/precision.h"
#include "model/config.h"
#include "optim/optim_config.h"

namespace nt {

struct TimedSteps {
  // One entry per timed step. Over several ranks, comm_s is this rank's time inside the gradient
  // sum and the parameters' sharing (the part of the sum that overlapped the backward is not in
  // it), and forward_backward_s and optimizer_s exclude it. wait_s (steps timed without the
  // overlap only) is the part of comm_s spent in a barrier before the sum: this rank waiting for
  // slower ones to finish their backward, apart from the transfer itself.
  std::vector<double> forward_backward_s, optimizer_s, comm_s, wait_s;
  std::vector<double> step_s() const;  // their sums
};

// One warm-up step, then `steps` timed ones of `batch` sequences of c.seq_len tokens;
// `after_warmup` (if any) runs between them (e.g. to switch the profiler on). With `comm` of
// several ranks, every rank calls it: each computes batch / ranks of the sequences (which must
// divide), and the step is the training loop's: the gradients summed onto their owners, the
// sharded optimizer, the updated tensors shared from their owners. `overlap` false sums the
// gradients after the backward instead of during it (to measure what the overlap hides).
TimedSteps time_training_steps(const ModelConfig& c, const KernelTable& k, Precision prec, const OptimConfig& oc,
                               int batch, int steps, const std::function<void()>& after_warmup = {},
                               dist::Comm* comm = nullptr, bool overlap = true);

double median(std::vector<double> v);

}  // namespace nt
