// SPDX-License-Identifier: MIT
// Every setting of a training run, declared once in for_each_field: its flag, help, default,
// check and JSON key. The CLI's options (cmd_train.cc), the checkpoints' copy (to_json /
// from_json), config.json's "flags" and validate() all follow from that list.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/fields.h"
#include "model/config.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/interval.h"

namespace nt {

struct TrainConfig {
  std::string data_dir = "data/shards-8192";  // the default corpus + BPE 8192, made on first use
  std::string run_dir;  // empty: runs/<date>-<time>
  std::string device = "cpu";
  std::string dtype;    // "bf16" or "fp32"; empty = the backend's default
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
  std::string core_every = "0";    // CORE: "0" (only at the end), "N" steps, or a duration
  std::string core_bundle;         // CORE evaluation bundle; empty = no CORE
  int64_t core_max_per_task = 500;  // CORE items per task (0 = all)
  int threads = 0;                 // 0 = every core this process may use
  double peak_gflops = 0;          // 0 = measure the dtype's peak (before and after training)
  int sample_tokens = 64;
  std::string sample_prompt = "The ";
  bool quiet = false;
  bool tensorboard = false;        // also write metrics as TensorBoard events in RUN/tensorboard/
  std::string save_every = "10m";  // "0" (only at the end), "N" steps, or a training-time duration
  int keep_checkpoints = 2;        // newest N checkpoints kept
  std::string on_nan = "stop";     // "stop" or "rollback" (to the last checkpoint, halving LRs)
  std::string resume;              // a run folder to continue from its newest valid checkpoint
  bool overwrite = false;          // start over in a folder that holds a run (its files removed first)

  // In the order `nanotrain train --help` lists them.
  template <class V>
  void for_each_field(V&& v);

  // The flags as given (not resolved), for checkpoints: resolution is deterministic.
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j);  // throws nt::Error
  // Every check that needs no data; errors name the flag.
  void validate() const;
};

template <class V>
void TrainConfig::for_each_field(V&& v) {
  v(data_dir, {.key = "data_dir", .flag = "--data",
               .help = "Prepared data folder (nanotrain data prepare); the default is made on first use from the "
                       "default corpus with a BPE tokenizer of 8192",
               .show_default = true});
  v(run_dir, {.key = "run_dir", .flag = "--run-dir", .help = "Run folder to write (default runs/<date>-<time>)"});
  v(device, {.key = "device", .flag = "--device", .help = "Backend: cpu, ref (slow plain reference)",
             .show_default = true});
  v(dtype, {.key = "dtype", .flag = "--dtype",
            .help = "bf16 | fp32: GEMM precision (fp32 master weights and optimizer state either way; default bf16 "
                    "where the CPU has AVX-512-BF16)",
            .optional = true});
  v(profile, {.key = "profile", .flag = "--profile",
              .help = "Print where a step's time goes and write RUN/trace.json (Chrome trace, opens in Perfetto)",
              .optional = true});
  v(time_budget, {.key = "time_budget", .flag = "--time-budget",
                  .help = "Training time (data+fwd+bwd+optimizer): 90s, 5m, 1h", .show_default = true});
  v(steps, {.key = "steps", .flag = "--steps", .help = "Train for N optimizer steps instead of a time budget",
            .cli_positive = true, .min = 0, .error = "must be positive"});
  v(shape, {.key = "shape", .group = "Model"});
  const char* g = "Optimization";
  v(batch_size, {.key = "batch_size", .flag = "--batch-size", .help = "Sequences per micro-batch (default 16; frontier 4)",
                 .group = g, .cli_positive = true, .min = 0, .error = "must be positive"});
  v(total_batch_tokens, {.key = "total_batch_tokens", .flag = "--total-batch-tokens",
                         .help = "Tokens per optimizer step (gradient accumulation)", .group = g,
                         .cli_positive = true, .min = 0, .error = "must be positive"});
  v(optim, {.key = "optim", .group = g});
  v(schedule, {.key = "schedule", .group = g});
  v(packing, {.key = "packing", .flag = "--packing", .help = "bestfit (every row starts at a document) or stream",
              .group = g, .show_default = true, .choices = "bestfit stream"});
  v(seed, {.key = "seed", .flag = "--seed", .help = "Seed for init and data order", .group = g, .show_default = true});
  g = "Evaluation and output";
  v(eval_every, {.key = "eval_every", .flag = "--eval-every",
                 .help = "0 (end only), N steps, or a training-time duration like 60s", .group = g,
                 .show_default = true, .check = check_interval});
  v(eval_tokens, {.key = "eval_tokens", .flag = "--eval-tokens", .help = "Limit validation targets (0 = whole split)",
                  .group = g, .show_default = true, .min = 0, .error = "must be >= 0"});
  v(eval_batch_size, {.key = "eval_batch_size", .flag = "--eval-batch-size",
                      .help = "Validation batch (default --batch-size)", .group = g, .cli_positive = true, .min = 0,
                      .error = "must be positive"});
  v(core_every, {.key = "core_every", .flag = "--core-every",
                 .help = "CORE on --core-bundle: 0 (end only), N steps, or a training-time duration like 10m (not "
                         "charged)",
                 .group = g, .show_default = true, .optional = true, .check = check_interval});
  v(core_bundle, {.key = "core_bundle", .flag = "--core-bundle",
                  .help = "CORE evaluation bundle (core.yaml, eval_meta_data.csv, eval_data/) scored during and "
                          "after training",
                  .group = g, .optional = true});
  v(core_max_per_task, {.key = "core_max_per_task", .flag = "--core-max-per-task",
                        .help = "CORE items per task after the seeded shuffle (0 = all)", .group = g,
                        .show_default = true, .optional = true, .min = 0, .error = "must be >= 0"});
  v(sample_tokens, {.key = "sample_tokens", .flag = "--sample-tokens", .help = "Tokens to sample at the end (0 = none)",
                    .group = g, .show_default = true, .min = 0, .error = "must be >= 0"});
  v(sample_prompt, {.key = "sample_prompt", .flag = "--sample-prompt", .help = "Prompt for the final sample",
                    .group = g, .show_default = true});
  v(threads, {.key = "threads", .flag = "--threads", .help = "Threads (0 = all cores)", .group = g,
              .show_default = true, .resume_may_change = true, .min = 0, .error = "must be >= 0"});
  v(peak_gflops, {.key = "peak_gflops", .flag = "--peak-gflops",
                  .help = "Peak GFLOP/s of the whole job, for MFU (default: measured for the run's dtype before and "
                          "after training; over several ranks, the sum of theirs)",
                  .group = g, .min = 0, .finite = true, .error = "must be positive and finite"});
  v(quiet, {.flag = "--quiet", .help = "No progress output", .group = g, .resume_may_change = true});
  v(tensorboard, {.flag = "--tensorboard", .help = "Also write the metrics as TensorBoard events in RUN/tensorboard/",
                  .group = g, .resume_may_change = true});
  g = "Checkpoints and faults";
  v(save_every, {.key = "save_every", .flag = "--save-every",
                 .help = "Checkpoint every N steps or training-time duration (0 = end only)", .group = g,
                 .show_default = true, .check = check_interval});
  v(keep_checkpoints, {.key = "keep_checkpoints", .flag = "--keep-checkpoints", .help = "Newest checkpoints kept",
                       .group = g, .show_default = true, .min = 1, .error = "must be at least 1"});
  v(on_nan, {.key = "on_nan", .flag = "--on-nan",
             .help = "Non-finite loss/gradient: stop, or rollback to the last checkpoint with halved LRs", .group = g,
             .show_default = true, .choices = "stop rollback"});
  v(resume, {.flag = "--resume", .help = "Continue this run folder from its newest valid checkpoint (its own settings)",
             .group = g, .resume_may_change = true});
  v(overwrite, {.flag = "--overwrite",
                .help = "Start over in a --run-dir that holds a run: its files are removed first (a folder that holds "
                        "anything else is refused)",
                .group = g});
}

}  // namespace nt
