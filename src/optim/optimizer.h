// SPDX-License-Identifier: MIT
// The optimizers over the parameter table's groups:
//  * Muon for every matrix inside the blocks: Nesterov momentum, then the update is
//    orthogonalised by Newton-Schulz (the quintic (3.4445, -4.7750, 2.0315), or Polar Express's
//    per-iteration polynomials) on the Frobenius-normalised matrix, working on the smaller Gram
//    side, and scaled by sqrt(max(1, rows/cols)). Optional passes around the iteration
//    (muon_variants.h): MuonEq before it; Muon+ renormalisation and NorMuon after it; decoupled,
//    optionally cautious, weight decay in the update.
//    The matrices are shared among the OpenMP threads, each orthogonalising its own with
//    one-thread GEMMs: Newton-Schulz's GEMMs are too small to split well across cores.
//  * AdamW (decoupled weight decay, bias correction) for every other group, each with its own
//    learning rate, betas and decay (OptimConfig::adam_group).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "composed/newton_schulz_bf16.h"
#include "core/buffer.h"
#include "kernels/kernels.h"
#include "model/params.h"
#include "optim/optim_config.h"

namespace nt {

class Optimizer {
 public:
  void set_lr_scale(double s) { cfg_.lr_scale = s; }
  double lr_scale() const { return cfg_.lr_scale; }
  // `owned` (indexed like the parameter table; empty: every tensor) marks the tensors this
  // optimizer updates and keeps state for: over several ranks each rank owns a share (ZeRO-1),
  // and the other tensors' owners update them and send the results.
  Optimizer(const OptimConfig& cfg, ParamArena& params, const KernelTable& k, const std::vector<bool>& owned = {});
  // One update with every learning rate multiplied by lrm, at `progress` of the budget (Muon's
  // weight-decay schedule) and `warmdown` of the LR warm-down done (Muon's momentum warm-down).
  void step(ParamArena& params, const ParamArena& grads, double lrm, double progress = 0, double warmdown = 0);
  int64_t steps_taken() const { return t_; }
  void set_steps_taken(int64_t t) { t_ = t; }
  // State for checkpoints: Adam moments and Muon momentum of the owned tensors; a matrix's part
  // of v holds NorMuon's factored second moment (normuon_state_size floats). Laid out like the
  // parameters when every tensor is owned; packed (tensor by tensor, 64-byte aligned) otherwise.
  Buffer<float>& m() { return m_; }
  Buffer<float>& v() { return v_; }
  // The owned tensors' state copied to (export) or from (import) buffers laid out like the
  // parameters; the other tensors' parts are left alone.
  void export_state(const ParamArena& layout, float* m, float* v) const;
  void import_state(const ParamArena& layout, const float* m, const float* v);
  bool owns(size_t i) const { return state_offsets_[i] != kNotOwned; }
  // An owned tensor's state (numel floats each).
  const float* m_of(size_t i) const { return m_.data() + state_offsets_[i]; }
  const float* v_of(size_t i) const { return v_.data() + state_offsets_[i]; }
  // Bytes of the moments this optimizer holds (m and v, without Muon's scratch).
  size_t state_bytes() const { return (m_.size() + v_.size()) * sizeof(float); }
  // Floats of optimizer state and scratch for the `owned` parameters (empty: all; for the memory
  // estimate), with Muon's scratch for `threads` threads (<= 0: job_threads()).
  static size_t state_floats(const std::vector<ParamSpec>& specs, int threads = 0, bool bf16_newton_schulz = false,
                             const std::vector<bool>& owned = {});
  // Threads that orthogonalise matrices side by side (1: one matrix at a time, each GEMM on every
  // thread; chosen when the matrices do not split evenly among the threads).
  int muon_threads() const { return int(work_.size()); }

 private:
  // One thread's Newton-Schulz scratch: x, y (rows * cols), a, b (the smaller side squared).
  // Its context: with one list, the optimizer's; with several (side by side, one thread each),
  // a one-thread context with a workspace of its own.
  struct MuonScratch {
    Buffer<float> x, y, a, b;
    NewtonSchulzBf16 ns_bf16;
    std::unique_ptr<ExecContext> own_ctx;  // null: the optimizer's
  };
  // One step's Muon settings, after the schedules.
  struct MuonStep {
    float lr, momentum, wd;
  };
  void muon_update(MuonScratch& s, float* p, const float* g, float* buf, float* v2, int64_t rows, int64_t cols,
                   const MuonStep& st, bool main_thread);
  const ExecContext& exec(const MuonScratch& s) const { return s.own_ctx ? *s.own_ctx : ctx_; }
  float* orthogonalize(MuonScratch& s, float* u, int64_t rows, int64_t cols, bool main_thread);
  void muon_step(ParamArena& params, const ParamArena& grads, const MuonStep& st);
  OptimConfig cfg_;
  const KernelTable& k_;
  ExecContext ctx_;  // job_threads() threads: AdamW, and Muon where it runs one matrix at a time
  int64_t t_ = 0;
  static constexpr size_t kNotOwned = ~size_t(0);
  // m_: Adam first moment or Muon momentum; v_: Adam second moment, or NorMuon's for matrices.
  // Tensor i's part starts at state_offsets_[i] (kNotOwned: another rank's tensor).
  Buffer<float> m_, v_;
  std::vector<size_t> state_offsets_;
  std::vector<MuonScratch> scratch_;      // one per entry of work_
  std::vector<std::vector<size_t>> work_;  // per thread: the parameter indices of its matrices
};

// Newton-Schulz orthogonalisation of x (rows, cols) in place, rows <= cols required; y is
// scratch of rows * cols, a and b of rows * rows.
void newton_schulz(const KernelTable& k, const ExecContext& ctx, float* x, float* y, float* a, float* b, int64_t rows,
                   int64_t cols, int steps, NsCoeffs coeffs = NsCoeffs::kQuintic);
// The FLOPs newton_schulz (and NewtonSchulzBf16: the same products) runs on a (rows, cols)
// matrix, rows <= cols, counting every product whole (the Gram triangles run ~62 % of it).
// gram_when_long = false: the plain iteration's count even for long matrices (NewtonSchulzBf16
// where bf16 runs on matrix tiles).
double newton_schulz_flops(int64_t rows, int64_t cols, int steps, bool gram_when_long = true);

}  // namespace nt
