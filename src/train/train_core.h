// SPDX-License-Identifier: MIT
// CORE during training (--core-bundle, --core-every): the bundle is read and validated once,
// before training starts, and evaluated on the training model's current weights with the fast
// scorer (fp32 from the master weights, whatever precision the model trains in). Its figures go
// to metrics.jsonl, the terminal and summary.json in the shapes made here.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/core/core_eval.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

namespace nt {

class TrainCore {
 public:
  // Reads the bundle; a bad one is the bundle reader's one-line error, after "--core-bundle: ".
  TrainCore(const std::string& bundle_dir, int64_t max_per_task);

  // CORE of the model as it is now, over the first max_per_task items of every task; on_progress
  // sees (items done, items in all) after each chunk. Throws nt::Error for an item the model
  // cannot score (a prompt whose scored span falls outside the context).
  CoreResult evaluate(Gpt& model, const Tokenizer& tok, int max_len,
                      const std::function<void(int64_t, int64_t)>& on_progress) const;

  const CoreBundle& bundle() const { return bundle_; }
  int64_t max_per_task() const { return max_per_task_; }

 private:
  CoreBundle bundle_;
  int64_t max_per_task_;
};

// {label: {"accuracy", "centered"}} for every task run.
nlohmann::json core_tasks_json(const CoreResult& r);
// metrics.jsonl's line: {"type": "core", "step", "train_seconds", "core", "core_seconds", "items", "tasks"}.
nlohmann::json core_metric_json(const CoreResult& r, int64_t step, double train_seconds);
// The terminal's line after an evaluation.
std::string core_line(const CoreResult& r, int64_t step);

}  // namespace nt
