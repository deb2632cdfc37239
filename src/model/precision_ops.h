// SPDX-License-Identifier: MIT
// The model's ops in one precision: the one place where fp32 and bf16 runs differ. The model
// (gpt.cc, gpt_backward.cc) is one straight line of calls; the op set it was built with decides
// which kernels and which GEMM operands each call uses, and which fused ops the backend offers
// are taken (precision_ops_fp32.cc, precision_ops_bf16.cc).
#pragma once
#include <cstdint>
#include <memory>

#include "kernels/kernels.h"
#include "kernels/precision.h"

namespace nt {

// A GEMM operand: the fp32 tensor and, in bf16 runs, its bf16 copy (the one the GEMM reads).
struct Operand {
  const float* f = nullptr;
  const uint16_t* h = nullptr;
};

// The MLP's activation: ReLU^2 (the baseline), GELU (tanh form) or SwiGLU (fc holds [gate | up]).
enum class MlpAct { kRelu2, kGelu, kSwiglu };

// The MLP's tensors of one layer (N rows, C channels, F hidden): x += act(ln2 Wfc^T) Wproj^T.
// fc is the pre-activation kept for the backward: fp32 in fp32 runs (fc), bf16 in bf16 runs (fc_h);
// (N, F), or (N, 2F) for SwiGLU, whose Wfc is (2F, C).
struct MlpTensors {
  float* fc;
  uint16_t* fc_h;
  Operand ln2, wfc, wproj;
  int64_t n, c, f;
  MlpAct act = MlpAct::kRelu2;
  int64_t fin() const { return act == MlpAct::kSwiglu ? 2 * f : f; }  // Wfc's rows
};
// Scratch shared between layers: fp32 activation and its gradient (fp32 runs), bf16 ones (bf16).
// SwiGLU: act holds (N, 2F), the pre-activation's gradient after the activation's.
struct MlpScratch {
  float* act;
  float* dact;
  uint16_t* act_h;   // relu2(fc), then its gradient (bf16)
  uint16_t* dact_h;  // the down product's data gradient (bf16, where it is not fused)
};

class PrecisionOps {
 public:
  // The op set runs the table's ops with ctx (the model's context, which outlives it).
  static std::unique_ptr<PrecisionOps> make(const KernelTable& k, const ExecContext& ctx, Precision p);
  virtual ~PrecisionOps() = default;
  virtual Precision precision() const = 0;

  // c = op(a) op(b) + beta c, with the kernels.h matmul contract.
  virtual void mm(float* c, Operand a, Operand b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                  float beta) const = 0;
  // The operand of a tensor f whose bf16 copy h exists already (bf16 runs read h).
  virtual Operand pair(const float* f, const uint16_t* h) const = 0;
  // The operand of an fp32 activation x (n elements): in bf16 runs, x rounded into slot.
  virtual Operand convert(uint16_t* slot, const float* x, int64_t n) const = 0;
  // The weights' bf16 copy, at the start of each forward (nothing in fp32 runs).
  virtual void round_weights(uint16_t* wbf, const float* w, int64_t n) const = 0;

  // rmsnorm_fwd / rmsnorm_bwd; bf16 runs also write the result's bf16 copy into out_h (dinp_h),
  // out may be null (only the copy is kept), and the backward reads the normalised output from
  // its copy out_h (which dinp_h may be).
  virtual void norm_fwd(float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows, int64_t dim,
                        float eps) const = 0;
  virtual void norm_bwd(float* dinp, uint16_t* dinp_h, const float* dout, const float* out, const uint16_t* out_h,
                        const float* rstd, int64_t rows, int64_t dim, bool accumulate) const = 0;
  decltype(KernelTable::attention_fwd) attention_fwd;
  decltype(KernelTable::attention_bwd) attention_bwd;

  // The MLP: forward into the residual x (+=), and backward: dwfc, dwproj (+= with beta_w 1, =
  // with 0) and dln (=) from dx, the residual's gradient.
  virtual void mlp_fwd(float* x, const MlpTensors& t, const MlpScratch& s) const = 0;
  virtual void mlp_bwd(float* dln, float* dwfc, float* dwproj, Operand dx, const MlpTensors& t, const MlpScratch& s,
                       float beta_w) const = 0;
  // The q, k, v projections' backward: their weight gradients (+= / = by beta_w) and dln (=).
  // dq (N, HD), dk, dv (N, KD) are fp32; slots: bf16 scratch for their operands (q's of N * (HD +
  // 2 KD), k's and v's of N * KD). w_q, w_k, w_v and dw_q, ... are each (rows, C).
  struct QkvGrads {
    const float *dq, *dk, *dv;
    float *dwq, *dwk, *dwv;
    Operand wq, wk, wv, ln1;
    uint16_t *slot_q, *slot_k, *slot_v;
    int64_t n, c, hd, kd;
  };
  virtual void qkv_bwd(float* dln, const QkvGrads& g, float beta_w) const;
  // Soft-capped cross-entropy over rows of logits (softcap_xent's contract); with grad_scale != 0
  // returns the operand holding dL/dlogits for the head's backward GEMMs (in bf16 runs written
  // into slot, rows * V elements).
  virtual Operand xent(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                       float grad_scale, uint16_t* slot) const = 0;

 protected:
  PrecisionOps(const KernelTable& k, const ExecContext& ctx) : k_(k), ctx_(ctx) {}
  const KernelTable& k_;
  const ExecContext& ctx_;
};

}  // namespace nt
