// SPDX-License-Identifier: MIT
// What a finished training run reports: RUN/summary.json and the command's last lines.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/fields.h"

namespace nt {

struct TrainSummary {
  double val_bpb = 0, val_loss = 0;
  uint64_t val_targets = 0;
  double final_train_loss = 0;
  double train_seconds = 0, time_budget_seconds = 0, budget_overshoot_seconds = 0, mean_step_seconds = 0;
  int64_t steps = 0, tokens_trained = 0;
  double tokens_per_second = 0, mfu = 0, peak_gflops = 0;
  std::string peak_source;
  double flops_per_token = 0;
  int64_t params_total = 0, params_matmul = 0;
  int threads = 0;
  std::string preset, device, kernels, dtype;
  double eval_seconds = 0, data_seconds = 0, save_seconds = 0, sample_seconds = 0;
  int64_t rollbacks = 0;
  double wall_seconds = 0;
  size_t peak_rss_bytes = 0, estimated_memory_bytes = 0;
  std::string sample, run_dir;
  // CORE (--core-bundle), written to summary.json only for a run with a bundle: the final
  // evaluation ("core" is null when it failed, "core_error" says why) and the time of all of them.
  bool core_run = false;
  std::optional<double> core;
  nlohmann::json core_tasks = nlohmann::json::object();  // {label: {accuracy, centered}}
  double core_seconds = 0;
  std::string core_error;
  // The job's ranks (one for a single process): each one's tokens/s, communication time and
  // optimizer state (TrainLoop::rank_report), and the totals over them.
  nlohmann::json ranks = nlohmann::json::array();
  int64_t optimizer_state_bytes = 0;  // every rank's together (one process's whole state)
  double comm_seconds = 0, comm_share = 0;  // rank 0's, and its share of rank 0's step time
  void set_ranks(const nlohmann::json& r) {
    ranks = r;
    optimizer_state_bytes = 0;
    for (const auto& x : r) optimizer_state_bytes += x["optimizer_state_bytes"].get<int64_t>();
    if (!r.empty()) comm_seconds = r[0]["comm_seconds"].get<double>(), comm_share = r[0]["comm_share"].get<double>();
  }

  template <class V>
  void for_each_field(V&& v) {
    v(val_bpb, {.key = "val_bpb"});
    v(val_loss, {.key = "val_loss"});
    v(val_targets, {.key = "val_targets"});
    v(final_train_loss, {.key = "final_train_loss"});
    v(train_seconds, {.key = "train_seconds"});
    v(time_budget_seconds, {.key = "time_budget_seconds"});
    v(budget_overshoot_seconds, {.key = "budget_overshoot_seconds"});
    v(mean_step_seconds, {.key = "mean_step_seconds"});
    v(steps, {.key = "steps"});
    v(tokens_trained, {.key = "tokens_trained"});
    v(tokens_per_second, {.key = "tokens_per_second"});
    v(mfu, {.key = "mfu"});
    v(peak_gflops, {.key = "peak_gflops"});
    v(peak_source, {.key = "peak_source"});
    v(flops_per_token, {.key = "flops_per_token"});
    v(params_total, {.key = "params_total"});
    v(params_matmul, {.key = "params_matmul"});
    v(threads, {.key = "threads"});
    v(preset, {.key = "preset"});
    v(device, {.key = "device"});
    v(kernels, {.key = "kernels"});
    v(dtype, {.key = "dtype"});
    v(eval_seconds, {.key = "eval_seconds"});
    v(data_seconds, {.key = "data_seconds"});
    v(save_seconds, {.key = "save_seconds"});
    v(sample_seconds, {.key = "sample_seconds"});
    v(rollbacks, {.key = "rollbacks"});
    v(wall_seconds, {.key = "wall_seconds"});
    v(peak_rss_bytes, {.key = "peak_rss_bytes"});
    v(estimated_memory_bytes, {.key = "estimated_memory_bytes"});
    v(optimizer_state_bytes, {.key = "optimizer_state_bytes"});
    v(comm_seconds, {.key = "comm_seconds"});
    v(comm_share, {.key = "comm_share"});
    v(sample, {.key = "sample"});
    v(run_dir, {.key = "run_dir"});
  }
  nlohmann::json to_json() const {
    nlohmann::json j = fields_to_json(*this);
    j["ranks"] = ranks;
    if (core_run) {
      j["core"] = core ? nlohmann::json(*core) : nlohmann::json(nullptr);
      j["core_tasks"] = core_tasks;
      j["core_seconds"] = core_seconds;
      if (!core_error.empty()) j["core_error"] = core_error;
    }
    return j;
  }
};

}  // namespace nt
