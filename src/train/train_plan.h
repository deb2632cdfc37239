// SPDX-License-Identifier: MIT
// What a training run will do, worked out from its settings and its data before anything big
// is allocated: the kernels and precision, the model's shape, the batch and its accumulation,
// the cadences, and the memory it needs (refused when it cannot fit).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/loader.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/gpt.h"
#include "optim/optimizer.h"
#include "tokenizer/tokenizer.h"
#include "train/interval.h"
#include "train/train_config.h"

namespace nt {

// Bytes the run needs: parameters, gradients (as large), optimizer state, activations. Over
// several ranks, one rank's: its share of the optimizer state (the largest rank's), and the
// whole second moment it holds while a checkpoint is collected or restored (the first moment
// passes through the gradients' memory).
struct MemoryEstimate {
  size_t params = 0, state = 0, activations = 0, available = 0;
  size_t state_whole = 0, checkpoint_copy = 0;  // one process's state; 0 in one process
  size_t need() const { return 2 * params + state + activations + checkpoint_copy; }
};

// Refuses, before anything is allocated, a forward-only model (sample, eval) of this shape and
// batch that would need more than 90 % of the available memory; `what` names the command.
void check_inference_memory(const ModelConfig& model, int batch, int seq, const char* what);

struct TrainPlan {
  TrainConfig cfg;  // validated; run_dir filled in
  const Backend* backend = nullptr;
  const KernelTable* kernels = nullptr;
  Precision prec = Precision::kFp32;
  int threads = 0;      // per rank
  int ranks = 1;        // processes training together (dist::world())
  double budget_s = 0;  // 0 for a step-count run
  Interval eval_every, save_every, core_every;
  PackMode pack = PackMode::BestFit;
  ModelConfig model;
  OptimConfig optim;  // resolved for the model
  int B = 0, T = 0, eval_B = 0;
  int64_t step_tokens = 0, accum = 0;  // tokens an optimizer step, micro-batches in it
  int64_t n_params = 0, n_matmul = 0;
  double flops_per_token = 0;
  MemoryEstimate memory;
  std::string machine;  // the backend's description of the machine
};

// The settings: validated, the device's backend, kernels and precision, the threads set up.
// Errors name the flag.
TrainPlan plan_settings(const TrainConfig& cfg);
// The shape and batch from the data's tokenizer, and the memory estimate.
void plan_model(TrainPlan& p, const Tokenizer& tok);
// Fails with a one-line advice when the estimate does not fit in the available memory.
void check_memory(const TrainPlan& p);

// The run's resolved settings as config.json records them, with the training data's size (one
// epoch, which the planner's scaling law needs).
nlohmann::json config_json(const TrainPlan& p, const std::string& run_id, const std::string& tok_spec, const Tokenizer& tok,
                           double peak_gflops, uint64_t data_train_tokens);

// The header lines a run prints (version, device, model, memory).
std::string plan_device_line(const TrainPlan& p);
std::string plan_model_line(const TrainPlan& p);
std::string plan_memory_line(const TrainPlan& p);
std::string plan_batch_line(const TrainPlan& p);

std::string human_bytes(double b);

}  // namespace nt
