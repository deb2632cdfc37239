// SPDX-License-Identifier: MIT
#include "train/train_core.h"

#include "core/check.h"
#include "eval/core/scorer_fast.h"

namespace nt {

TrainCore::TrainCore(const std::string& bundle_dir, int64_t max_per_task) : max_per_task_(max_per_task) {
  try {
    bundle_ = read_bundle(bundle_dir);
  } catch (const Error& e) {
    fail("--core-bundle: %s", e.what());
  }
}

CoreResult TrainCore::evaluate(Gpt& model, const Tokenizer& tok, int max_len,
                               const std::function<void(int64_t, int64_t)>& on_progress) const {
  // Made for each evaluation: its batch buffers are not held while training runs.
  FastScorer scorer(model);
  CoreEvalOptions opt;
  opt.max_per_task = max_per_task_;
  if (on_progress)
    opt.on_progress = [&](const std::string&, int64_t, int64_t, int64_t done, int64_t total) {
      on_progress(done, total);
    };
  return evaluate_core(bundle_, tok, max_len, scorer, opt);
}

nlohmann::json core_tasks_json(const CoreResult& r) {
  nlohmann::json tasks = nlohmann::json::object();
  for (const CoreTaskResult& t : r.tasks) tasks[t.label] = {{"accuracy", t.accuracy}, {"centered", t.centered}};
  return tasks;
}

nlohmann::json core_metric_json(const CoreResult& r, int64_t step, double train_seconds) {
  return {{"type", "core"},
          {"step", step},
          {"train_seconds", train_seconds},
          {"core", r.core},
          {"core_seconds", r.seconds},
          {"items", r.examples},
          {"tasks", core_tasks_json(r)}};
}

std::string core_line(const CoreResult& r, int64_t step) {
  return strf("step %lld | CORE %.4f over %zu task(s) | %lld items in %.1fs (not charged)", (long long)step, r.core,
              r.tasks.size(), (long long)r.examples, r.seconds);
}

}  // namespace nt
