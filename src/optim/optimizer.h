// SPDX-License-Identifier: MIT
// The baseline's optimizers over the parameter table's groups:
//  * Muon for every matrix inside the blocks: Nesterov momentum, then the update is
//    orthogonalised by Newton-Schulz (quintic (3.4445, -4.7750, 2.0315)) on the
//    Frobenius-normalised matrix, working on the smaller Gram side, and scaled by
//    sqrt(max(1, rows/cols)).
//    The matrices are shared among the OpenMP threads, each orthogonalising its own with
//    one-thread GEMMs: Newton-Schulz's GEMMs are too small to split well across cores.
//  * AdamW (decoupled weight decay, bias correction) for the embedding and the output head.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/buffer.h"
#include "core/fields.h"
#include "kernels/kernels.h"
#include "composed/newton_schulz_bf16.h"
#include "model/params.h"

namespace nt {

struct OptimConfig {
  double lr_matrix = 0.02;  // Muon
  double lr_embed = -1;     // AdamW; < 0: 0.2 * (d_model / 768)^-0.5
  double lr_head = -1;      // AdamW; < 0: 0.004 * (d_model / 768)^-0.5
  double beta1 = 0.8, beta2 = 0.95, eps = 1e-10;
  double weight_decay = 0.0;  // AdamW groups
  double momentum = 0.95;     // Muon
  int ns_steps = 5;
  bool bf16_newton_schulz = false;  // run Newton-Schulz's GEMMs in bf16 (fp32 accumulation)
  double lr_scale = 1.0;  // multiplies every learning rate (halved by --on-nan rollback)
  // Fills the d_model-scaled defaults and checks ranges (errors name the flag).
  void resolve(int d_model);
  nlohmann::json to_json() const;

  // The settings a flag sets (bf16_newton_schulz and lr_scale are the trainer's).
  template <class V>
  void for_each_field(V&& v) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    v(lr_matrix, {.key = "lr_matrix", .flag = "--lr-matrix", .help = "Muon learning rate", .show_default = true,
                  .min = 0, .finite = true, .error = "must be >= 0"});
    v(lr_embed, {.key = "lr_embed", .flag = "--lr-embed",
                 .help = "AdamW LR for the embedding (default 0.2*(d/768)^-0.5)", .min = 0, .finite = true,
                 .negative_is_default = true, .error = "must be >= 0"});
    v(lr_head, {.key = "lr_head", .flag = "--lr-head",
                .help = "AdamW LR for the output head (default 0.004*(d/768)^-0.5)", .min = 0, .finite = true,
                .negative_is_default = true, .error = "must be >= 0"});
    v(beta1, {.key = "beta1", .flag = "--beta1", .help = "AdamW beta1", .show_default = true, .min = 0, .max = 1,
              .max_open = true, .error = "must be in [0, 1)"});
    v(beta2, {.key = "beta2", .flag = "--beta2", .help = "AdamW beta2", .show_default = true, .min = 0, .max = 1,
              .max_open = true, .error = "must be in [0, 1)"});
    v(eps, {.key = "eps", .flag = "--adam-eps", .help = "AdamW epsilon", .show_default = true, .min = 0,
            .max = kInf, .error = "must be >= 0"});
    v(weight_decay, {.key = "weight_decay", .flag = "--weight-decay", .help = "AdamW decoupled weight decay",
                     .show_default = true, .min = 0, .max = kInf, .error = "must be >= 0"});
    v(momentum, {.key = "momentum", .flag = "--muon-momentum", .help = "Muon Nesterov momentum",
                 .show_default = true, .min = 0, .max = 1, .max_open = true, .error = "must be in [0, 1)"});
    v(ns_steps, {.key = "ns_steps", .flag = "--ns-steps", .help = "Muon Newton-Schulz iterations",
                 .show_default = true, .min = 0, .max = 100, .error = "must be in [0, 100]"});
  }
};

class Optimizer {
 public:
  void set_lr_scale(double s) { cfg_.lr_scale = s; }
  double lr_scale() const { return cfg_.lr_scale; }
  Optimizer(const OptimConfig& cfg, ParamArena& params, const KernelTable& k);
  // One update with every learning rate multiplied by lrm.
  void step(ParamArena& params, const ParamArena& grads, double lrm);
  int64_t steps_taken() const { return t_; }
  void set_steps_taken(int64_t t) { t_ = t; }
  // State for checkpoints: Adam moments and Muon momentum, laid out like the parameters.
  Buffer<float>& m() { return m_; }
  Buffer<float>& v() { return v_; }
  // Floats of optimizer state and scratch for these parameters (for the memory estimate), with
  // Muon's scratch for `threads` threads (<= 0: OpenMP's thread count).
  static size_t state_floats(const std::vector<ParamSpec>& specs, int threads = 0, bool bf16_newton_schulz = false);
  // Threads that orthogonalise matrices side by side (1: one matrix at a time, each GEMM on every
  // thread; chosen when the matrices do not split evenly among the threads).
  int muon_threads() const { return int(work_.size()); }

 private:
  // One thread's Newton-Schulz scratch: x, y (rows * cols), a, b (the smaller side squared).
  struct MuonScratch {
    Buffer<float> x, y, a, b;
    NewtonSchulzBf16 ns_bf16;
  };
  void muon_update(MuonScratch& s, float* p, const float* g, float* buf, int64_t rows, int64_t cols, float lr,
                   bool main_thread);
  void muon_step(ParamArena& params, const ParamArena& grads, double lrm);
  OptimConfig cfg_;
  const KernelTable& k_;
  int64_t t_ = 0;
  // m_: Adam first moment or Muon momentum; v_: Adam second moment (unused for matrices).
  Buffer<float> m_, v_;
  std::vector<MuonScratch> scratch_;      // one per entry of work_
  std::vector<std::vector<size_t>> work_;  // per thread: the parameter indices of its matrices
};

// Newton-Schulz orthogonalisation of x (rows, cols) in place, rows <= cols required; y is
// scratch of rows * cols, a and b of rows * rows.
void newton_schulz(const KernelTable& k, float* x, float* y, float* a, float* b, int64_t rows, int64_t cols,
                   int steps);
// The FLOPs newton_schulz (and NewtonSchulzBf16: the same products) runs on a (rows, cols)
// matrix, rows <= cols, counting every product whole (the Gram triangles run ~62 % of it).
// gram_when_long = false: the plain iteration's count even for long matrices (NewtonSchulzBf16
// where bf16 runs on matrix tiles).
double newton_schulz_flops(int64_t rows, int64_t cols, int steps, bool gram_when_long = true);

}  // namespace nt
