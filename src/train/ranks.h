// SPDX-License-Identifier: MIT
// What the ranks of a job over several processes share: rank 0 reads and decides, the others
// receive (they need not see the same file system, nor the same clock).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm.h"
#include "model/gpt.h"
#include "optim/optimizer.h"
#include "train/checkpoint.h"
#include "train/run_folder.h"

namespace nt {

// The run's newest valid checkpoint, read by rank 0 and sent whole to every other rank.
CheckpointData shared_checkpoint(dist::Comm& c, const RunFolder& run);

// What rank 0 decided before a step; every rank acts on the same decision.
struct StepDecision {
  int32_t stop_signal = 0;  // a stop was requested (SIGINT / SIGTERM)
  int32_t finished = 0;     // the budget or the step count is used
  int32_t evaluate = 0, core = 0, save = 0;
  double progress = 0;  // the schedules' position
};
void share_decision(dist::Comm& c, StepDecision& d);

// The rank that updates each parameter tensor and holds its optimizer state (the sharded
// optimizer): matrices spread by their Newton-Schulz work, each to the least loaded rank so
// far; then the other tensors by size, each to the rank holding the least state so far, so that
// the state divides about evenly too.
std::vector<int> tensor_owners(const std::vector<ParamSpec>& specs, int ranks);
// The tensors `rank` owns (empty for a single rank: every tensor).
std::vector<bool> owned_by(const std::vector<int>& owners, int rank);
// The whole optimizer state on rank 0, laid out like the parameters in m and v (which only rank 0
// needs): each tensor's from its owner. Every rank calls it.
void gather_state(dist::Comm& c, const ParamArena& layout, const Optimizer& opt, const std::vector<int>& owners,
                  float* m, float* v);
// Each tensor's gradient summed across the ranks (in rank order, as allreduce_sum adds) onto its
// owner, which alone needs it: the sum ends on the last rank, which sends each other owner its
// tensors. A rank's copies of the tensors it does not own are left holding partial sums.
//
// The sums overlap the backward: layer_done(l), called once the backward has finished layer l,
// starts that layer's tensors (the first call also the head's, done before any layer) and moves
// the started sums on; finish() starts the rest (the embedding and the variants' tensors outside
// the blocks, whose gradients the backward completes last) and waits for every sum. The results
// are the same bits whenever each tensor starts.
class OwnerSum {
 public:
  OwnerSum(dist::Comm& c, ParamArena& grads, const std::vector<int>& owners);
  void layer_done(int layer);
  void finish();

 private:
  void start(size_t i);
  dist::Comm& c_;
  ParamArena& grads_;
  const std::vector<int>& owners_;
  std::vector<bool> started_;
};
// While it lives, `model`'s backward starts each finished layer's sums in `sum` (nothing when
// `sum` is null).
class LayerDoneHook {
 public:
  LayerDoneHook(Gpt& model, OwnerSum* sum) : model_(model) {
    if (sum) model.set_layer_done([sum](int layer) { sum->layer_done(layer); });
  }
  ~LayerDoneHook() { model_.set_layer_done({}); }
  LayerDoneHook(const LayerDoneHook&) = delete;
  LayerDoneHook& operator=(const LayerDoneHook&) = delete;

 private:
  Gpt& model_;
};
// Each tensor's part of `data` (laid out as the parameters: the updated weights) copied from its
// owner to every rank.
void share_from_owners(dist::Comm& c, const ParamArena& layout, float* data, const std::vector<int>& owners);

}  // namespace nt
