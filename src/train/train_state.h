// SPDX-License-Identifier: MIT
// The trainer's progress as a checkpoint records it: step counts, the time used (charged and
// not), the learning-rate scale left by rollbacks, and the loader's exact position. Reading it
// back validates every field, so a hand-made checkpoint with a valid checksum but impossible
// values (a negative step, a NaN time, a scale above 1) is an error naming the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nt {

struct TrainState {
  int64_t step = 0;             // optimizer steps done
  int64_t optimizer_steps = 0;  // the optimizer's own count (bias correction)
  int64_t tokens = -1;          // tokens trained (-1: not recorded; then step x tokens per step)
  double lr_scale = 1;          // halved by each --on-nan rollback
  double train_seconds = 0;     // charged to the budget
  std::vector<double> recent_step_seconds;  // the budget's step-time predictor
  double eval_seconds = 0, save_seconds = 0, data_seconds = 0;
  double last_eval_at = 0, last_save_at = 0;  // training time of the last eval / save
  // CORE's time (not charged) and the training time of its last evaluation; 0 in checkpoints
  // older than these fields.
  double core_seconds = 0, last_core_at = 0;
  int64_t rollbacks = 0;
  int64_t metrics_lines = 0;  // lines of metrics.jsonl that belong to this state
  nlohmann::json loader;      // TrainLoader::state(); the loader validates it against its data
  // The run that wrote it (RunFolder's id) and its tokenizer's identity (hex); "" in checkpoints
  // older than these fields.
  std::string run_id, tokenizer_id;

  nlohmann::json to_json() const;
  // Throws nt::Error "<name>: checkpoint state: ..." on a missing, mistyped or impossible field.
  static TrainState from_json(const nlohmann::json& j, const std::string& name);
};

}  // namespace nt
