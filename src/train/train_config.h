// SPDX-License-Identifier: MIT
// Every setting of a training run. The CLI fills it from flags (cmd_train.cc); config.json in
// the run folder records it resolved.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

namespace nt {

struct TrainConfig {
  std::string data_dir = "data/shards-8192";  // the default corpus + BPE 8192, made on first use
  std::string run_dir;  // empty: runs/<date>-<time>
  std::string device = "cpu";
  std::string dtype;    // "bf16" or "fp32"; empty = bf16 where the CPU has AVX-512-BF16
  bool profile = false; // per-phase time report and RUN/trace.json
  ShapeFlags shape;
  OptimConfig optim;
  Schedule schedule;
  std::string time_budget = "5m";  // training time only; ignored when steps > 0
  int64_t steps = 0;               // > 0: a step-count run
  int batch_size = 0;              // sequences per micro-batch; 0 = the preset's (16; frontier 4)
  int64_t total_batch_tokens = 0;  // tokens per optimizer step; 0 = batch_size * seq_len
  uint64_t seed = 1337;
  std::string packing = "bestfit";  // "bestfit" (BOS-aligned documents) or "stream"
  std::string eval_every = "0";    // "0" (only at the end), "N" steps, or a duration "60s"
  int64_t eval_tokens = 0;         // 0 = the whole validation split
  int eval_batch_size = 0;         // 0 = batch_size
  int threads = 0;                 // 0 = every core this process may use
  double peak_gflops = 0;          // 0 = measure the dtype's peak (before and after training)
  int sample_tokens = 64;
  std::string sample_prompt = "The ";
  bool quiet = false;
  // Reliability.
  std::string save_every = "10m";  // "0" (only at the end), "N" steps, or a training-time duration
  int keep_checkpoints = 2;        // newest N checkpoints kept
  std::string on_nan = "stop";     // "stop" or "rollback" (to the last checkpoint, halving LRs)
  std::string resume;              // a run folder to continue from its newest valid checkpoint

  // The flags as given (not resolved), for checkpoints: resolution is deterministic.
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j);  // throws nt::Error
};

struct TrainSummary {
  nlohmann::json json;
};

// A clean stop on SIGINT / SIGTERM: thrown after the checkpoint is written.
struct Interrupted {
  int signal;
  std::string message;
};

// Runs the whole job: data, model, loop under the budget, final eval, sample, run folder.
// With cfg.resume set, continues that run from its newest valid checkpoint.
TrainSummary run_training(const TrainConfig& cfg);

}  // namespace nt
