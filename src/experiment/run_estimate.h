// SPDX-License-Identifier: MIT
// What a planned run will be, without running it: its model's parameters, the memory it needs and
// its FLOPs per token, from the same planning the trainer does (the data's tokenizer fixes the
// vocabulary). Throughput is not predicted: that needs a measurement on the machine.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/train_config.h"

namespace nt::experiment {

struct RunEstimate {
  int64_t params = 0;
  size_t memory_bytes = 0;
  double flops_per_token = 0;
  int64_t step_tokens = 0;
  std::string error;  // why the run cannot be planned (a bad flag, data not prepared)
};

// Opens each data folder once.
std::vector<RunEstimate> estimate_runs(const std::vector<TrainConfig>& cfgs);

}  // namespace nt::experiment
