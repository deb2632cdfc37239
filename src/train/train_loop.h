// SPDX-License-Identifier: MIT
// The training loop: optimizer steps (micro-batches, the gradient check, the update) under the
// time budget or step count, evaluations and checkpoints at their cadence, non-finite losses
// (stop, or roll back with halved learning rates), and clean stops on SIGINT / SIGTERM.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/loader.h"
#include "dist/comm.h"
#include "eval/bpb.h"
#include "model/gpt.h"
#include "optim/optimizer.h"
#include "train/checkpoint.h"
#include "train/progress.h"
#include "train/ranks.h"
#include "train/run_folder.h"
#include "train/signals.h"
#include "train/time_budget.h"
#include "train/train_core.h"
#include "train/train_plan.h"

namespace nt {

// A step's communication, for its metrics line and progress (over several ranks).
struct StepComm {
  double seconds = 0;                  // this rank's wall time inside Comm calls
  std::vector<double> rank_compute_s;  // each rank's micro-batches (and data reading), in rank order
};

class TrainLoop {
 public:
  // The model starts from the seed's initialisation; `peak_gflops` is the MFU's peak.
  TrainLoop(const TrainPlan& plan, const Dataset& ds, RunFolder& run, TrainProgress& progress, double peak_gflops);

  // Continues from a checkpoint of this run.
  void resume_from(const CheckpointData& ck);
  // Trains until the budget or the step count is used; throws Interrupted on a stop signal
  // (after writing a checkpoint). The signal handlers stay until the loop is destroyed, so a
  // late signal cannot cut the final evaluation and files short.
  void run();
  // An evaluation on the validation split (logged, not charged).
  void evaluate();
  // CORE during training on this bundle (nullptr: none; it must outlive the loop).
  void set_core(const TrainCore* core) { core_ = core; }
  // A CORE evaluation (logged, not charged). A failure is reported and ends CORE for the run
  // (core_error()): it never stops training or the final files.
  void evaluate_core();
  bool core_enabled() const { return core_ != nullptr; }
  const std::optional<CoreResult>& last_core() const { return last_core_; }
  int64_t last_core_step() const { return last_core_step_; }
  double core_seconds() const { return core_seconds_; }
  const std::string& core_error() const { return core_error_; }
  // A checkpoint unless the current step has one.
  void save_if_new() {
    if (last_saved_step_ != step_) save();
  }

  Gpt& model() { return model_; }
  int64_t steps() const { return step_; }
  int64_t tokens() const { return tokens_; }  // trained so far (the batch-size schedule varies a step's)
  double train_seconds() const { return budget_.used(); }
  double last_loss() const { return last_loss_; }
  const BpbResult& last_eval() const { return last_eval_; }
  double eval_seconds() const { return eval_seconds_; }
  double data_seconds() const { return data_seconds_; }
  double save_seconds() const { return save_seconds_; }
  void add_save_seconds(double s) { save_seconds_ += s; }
  int64_t rollbacks() const { return rollbacks_; }
  // Each rank's share of this invocation's training (since the start or the resume): what it
  // computed, how long, and how long it spent communicating. Every rank calls it (a collective);
  // the result is complete on rank 0.
  nlohmann::json rank_report();

 private:
  // One optimizer step at `progress` of the budget (the schedules' input); false when the loss
  // or a gradient was not finite (the step is not taken).
  bool step(double progress);
  void log_step(double loss, double grad_norm, double lrm, double seconds, int64_t step_tokens);
  void sum_across_ranks(double* loss, StepComm& sc, double compute_seconds, OwnerSum& grad_sum);
  void share_updated_params();
  void restore(const CheckpointData& ck);
  void save();
  TrainState state() const;
  // Stops naming the culprit, or rolls back to the last checkpoint with halved rates.
  void on_non_finite(const std::string& what);
  [[noreturn]] void stop(int sig);

  const TrainPlan& plan_;
  const TrainConfig& cfg_;
  const Tokenizer& tok_;
  RunFolder& run_;
  TrainProgress& progress_;
  const double peak_gflops_;
  // The job's ranks: each computes its share of a step's micro-batches, the gradients are summed,
  // each rank updates the tensors it owns (and holds only their optimizer state) and sends them
  // to the others; rank 0 decides and writes; every rank evaluates its share of the validation.
  dist::Comm& comm_ = dist::world();
  std::vector<int> owners_;  // over several ranks: the rank updating each parameter tensor
  Gpt model_;
  Optimizer opt_;
  TrainLoader loader_;
  ValLoader val_;
  std::vector<int32_t> inputs_, targets_;
  TimeBudget budget_;
  int64_t step_ = 0, rollbacks_ = 0, last_saved_step_ = -1, tokens_ = 0;
  double eval_seconds_ = 0, save_seconds_ = 0, data_seconds_ = 0, last_eval_at_ = 0, last_save_at_ = 0;
  double last_loss_ = NAN;
  BpbResult last_eval_;
  const TrainCore* core_ = nullptr;
  std::optional<CoreResult> last_core_;
  int64_t last_core_step_ = -1;
  double core_seconds_ = 0, last_core_at_ = 0;
  std::string core_error_;
  std::optional<StopSignals> signals_;
  StepComm last_comm_;
  // This rank's totals over this invocation's steps (rank_report).
  int64_t rank_tokens_ = 0;
  double rank_train_s_ = 0, rank_compute_s_ = 0, rank_comm_s_ = 0;
};

}  // namespace nt
