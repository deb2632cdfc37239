// SPDX-License-Identifier: MIT
// The fp32 op set (exact; the parity tests run it), the choice of op set, and the q, k, v
// backward that both precisions share where the bf16 one has no fused form.
#include "model/precision_ops.h"
#include "profile/profile.h"

namespace nt {

std::unique_ptr<PrecisionOps> make_bf16_ops(const KernelTable& k, const ExecContext& ctx);  // precision_ops_bf16.cc

namespace {

class Fp32Ops final : public PrecisionOps {
 public:
  Fp32Ops(const KernelTable& k, const ExecContext& ctx) : PrecisionOps(k, ctx) {
    attention_fwd = k.attention_fwd;
    attention_bwd = k.attention_bwd;
  }
  Precision precision() const override { return Precision::kFp32; }

  void mm(float* c, Operand a, Operand b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
          float beta) const override {
    k_.matmul(ctx_, c, a.f, b.f, m, n, k, ta, tb, beta);
  }
  Operand pair(const float* f, const uint16_t*) const override { return {f, nullptr}; }
  Operand convert(uint16_t*, const float* x, int64_t) const override { return {x, nullptr}; }
  void round_weights(uint16_t*, const float*, int64_t) const override {}

  void norm_fwd(float* out, uint16_t*, float* rstd, const float* inp, int64_t rows, int64_t dim,
                float eps) const override {
    k_.rmsnorm_fwd(ctx_, out, rstd, inp, rows, dim, eps);
  }
  void norm_bwd(float* dinp, uint16_t*, const float* dout, const float* out, const uint16_t*, const float* rstd,
                int64_t rows, int64_t dim, bool accumulate) const override {
    k_.rmsnorm_bwd(ctx_, dinp, dout, out, rstd, rows, dim, accumulate);
  }

  // relu2(fc) is read straight from fc by the down product where the backend has that fused op,
  // else written out by relu2_fwd's own pass; the other activations by their own pass.
  void mlp_fwd(float* x, const MlpTensors& t, const MlpScratch& s) const override {
    {
      profile::Zone z(profile::kMlpUp);
      mm(t.fc, t.ln2, t.wfc, t.n, t.fin(), t.c, false, true, 0.0f);
    }
    const bool fused = t.act == MlpAct::kRelu2 && k_.matmul_relu2;
    if (!fused) {
      profile::Zone z(profile::kRelu2);
      activation(s.act, t);
    }
    profile::Zone z(profile::kMlpDown);
    if (fused) k_.matmul_relu2(ctx_, x, t.fc, t.wproj.f, t.n, t.c, t.f, false, true, 1.0f, true);
    else mm(x, {s.act, nullptr}, t.wproj, t.n, t.c, t.f, false, true, 1.0f);
  }

  void mlp_bwd(float* dln, float* dwfc, float* dwproj, Operand dx, const MlpTensors& t, const MlpScratch& s,
               float beta_w) const override {
    const int64_t N = t.n, C = t.c, F = t.f;
    {
      profile::Zone z(profile::kRelu2);  // the activation, recomputed rather than stored
      activation(s.act, t);
    }
    {
      profile::Zone z(profile::kMlpDown);
      mm(dwproj, dx, {s.act, nullptr}, C, F, N, true, false, beta_w);
      mm(s.dact, dx, t.wproj, N, F, C, false, false, 0.0f);
    }
    float* dfc = s.dact;  // the pre-activation's gradient: in place, or for SwiGLU's (N, 2F) in act
    {
      profile::Zone z(profile::kRelu2);
      switch (t.act) {
        case MlpAct::kRelu2:
          k_.relu2_bwd(ctx_, s.dact, s.dact, t.fc, N * F);
          break;
        case MlpAct::kGelu:
          k_.gelu_bwd(ctx_, s.dact, s.dact, t.fc, N * F);
          break;
        case MlpAct::kSwiglu:
          k_.swiglu_bwd(ctx_, s.act, s.dact, t.fc, N, F), dfc = s.act;
          break;
      }
    }
    profile::Zone z(profile::kMlpUp);
    mm(dwfc, {dfc, nullptr}, t.ln2, t.fin(), C, N, true, false, beta_w);
    mm(dln, {dfc, nullptr}, t.wfc, N, C, t.fin(), false, false, 0.0f);
  }

  Operand xent(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
               float grad_scale, uint16_t*) const override {
    k_.softcap_xent(ctx_, logits, losses, targets, rows, v, cap, grad_scale);  // the gradient over logits
    return {logits, nullptr};
  }

 private:
  // act (N, F) = the activation of the pre-activation t.fc.
  void activation(float* act, const MlpTensors& t) const {
    switch (t.act) {
      case MlpAct::kRelu2:
        k_.relu2_fwd(ctx_, act, t.fc, t.n * t.f);
        break;
      case MlpAct::kGelu:
        k_.gelu_fwd(ctx_, act, t.fc, t.n * t.f);
        break;
      case MlpAct::kSwiglu:
        k_.swiglu_fwd(ctx_, act, t.fc, t.n, t.f);
        break;
    }
  }
};

}  // namespace

// Six products: each of q, k, v's weight gradient and its share of dln.
void PrecisionOps::qkv_bwd(float* dln, const QkvGrads& g, float beta_w) const {
  const Operand dq = convert(g.slot_q, g.dq, g.n * g.hd), dk = convert(g.slot_k, g.dk, g.n * g.kd),
                dv = convert(g.slot_v, g.dv, g.n * g.kd);
  mm(g.dwq, dq, g.ln1, g.hd, g.c, g.n, true, false, beta_w);
  mm(g.dwk, dk, g.ln1, g.kd, g.c, g.n, true, false, beta_w);
  mm(g.dwv, dv, g.ln1, g.kd, g.c, g.n, true, false, beta_w);
  mm(dln, dq, g.wq, g.n, g.c, g.hd, false, false, 0.0f);
  mm(dln, dk, g.wk, g.n, g.c, g.kd, false, false, 1.0f);
  mm(dln, dv, g.wv, g.n, g.c, g.kd, false, false, 1.0f);
}

std::unique_ptr<PrecisionOps> PrecisionOps::make(const KernelTable& k, const ExecContext& ctx, Precision p) {
  if (p == Precision::kBf16) return make_bf16_ops(k, ctx);
  return std::make_unique<Fp32Ops>(k, ctx);
}

}  // namespace nt
