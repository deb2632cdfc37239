// SPDX-License-Identifier: MIT
// The training job: data, model, the loop under the budget, final eval, sample, run folder.
#pragma once
#include <string>

#include "train/train_config.h"
#include "train/train_summary.h"

namespace nt {

// A clean stop on SIGINT / SIGTERM: thrown after the checkpoint is written.
struct Interrupted {
  int signal;
  std::string message;
};

// With cfg.resume set, continues that run from its newest valid checkpoint.
TrainSummary run_training(const TrainConfig& cfg);

}  // namespace nt
