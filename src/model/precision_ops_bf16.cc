// SPDX-License-Identifier: MIT
// The bf16 op set: every GEMM takes bf16 operands with fp32 accumulation. The MLP's
// pre-activation and its gradient feed only the bf16 activation, so their GEMMs write them in
// bf16 (half the traffic of the two largest activations); the backend's fused GEMM + ReLU^2 ops
// are taken where it has them (GELU and SwiGLU run their own bf16 pass).
#include "core/check.h"
#include "model/precision_ops.h"
#include "profile/profile.h"

namespace nt {

namespace {

class Bf16Ops final : public PrecisionOps {
 public:
  Bf16Ops(const KernelTable& k, const ExecContext& ctx) : PrecisionOps(k, ctx) {
    NT_CHECK(k.matmul_bf16 && k.matmul_bf16_out && k.to_bf16 && k.to_bf16_rows && k.rmsnorm_fwd_bf16 &&
                 k.rmsnorm_bwd_bf16 && k.relu2_fwd_bf16 && k.relu2_bwd_bf16 && k.gelu_fwd_bf16 &&
                 k.gelu_bwd_bf16 && k.swiglu_fwd_bf16 && k.swiglu_bwd_bf16 && k.softcap_xent_bf16 &&
                 k.attention_fwd_bf16 && k.attention_bwd_bf16,
             "backend %s has no bf16 kernels", k.name);
    attention_fwd = k.attention_fwd_bf16;
    attention_bwd = k.attention_bwd_bf16;
  }
  Precision precision() const override { return Precision::kBf16; }

  void mm(float* c, Operand a, Operand b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
          float beta) const override {
    k_.matmul_bf16(ctx_, c, a.h, b.h, m, n, k, ta, tb, beta);
  }
  Operand pair(const float* f, const uint16_t* h) const override { return {f, h}; }
  Operand convert(uint16_t* slot, const float* x, int64_t n) const override {
    k_.to_bf16(ctx_, slot, x, n);
    return {x, slot};
  }
  void round_weights(uint16_t* wbf, const float* w, int64_t n) const override { k_.to_bf16(ctx_, wbf, w, n); }

  void norm_fwd(float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows, int64_t dim,
                float eps) const override {
    k_.rmsnorm_fwd_bf16(ctx_, out, out_h, rstd, inp, rows, dim, eps);
  }
  void norm_bwd(float* dinp, uint16_t* dinp_h, const float* dout, const float*, const uint16_t* out_h,
                const float* rstd, int64_t rows, int64_t dim, bool accumulate) const override {
    k_.rmsnorm_bwd_bf16(ctx_, dinp, dinp_h, dout, out_h, rstd, rows, dim, accumulate);
  }

  // The activation comes out of the up product's epilogue where the backend has it, else the
  // down product reads it straight from fc, else relu2_fwd_bf16's own pass writes it.
  void mlp_fwd(float* x, const MlpTensors& t, const MlpScratch& s) const override {
    if (t.act != MlpAct::kRelu2) return other_mlp_fwd(x, t, s);
    const bool in_up = k_.matmul_bf16_out_relu2 != nullptr, in_down = !in_up && k_.matmul_bf16_relu2;
    {
      profile::Zone z(profile::kMlpUp);
      if (in_up) k_.matmul_bf16_out_relu2(ctx_, t.fc_h, s.act_h, t.ln2.h, t.wfc.h, t.n, t.f, t.c, false, true);
      else k_.matmul_bf16_out(ctx_, t.fc_h, t.ln2.h, t.wfc.h, t.n, t.f, t.c, false, true);
    }
    if (!in_up && !in_down) {
      profile::Zone z(profile::kRelu2);
      k_.relu2_fwd_bf16(ctx_, s.act_h, t.fc_h, t.n * t.f);
    }
    profile::Zone z(profile::kMlpDown);
    if (in_down) k_.matmul_bf16_relu2(ctx_, x, t.fc_h, t.wproj.h, t.n, t.c, t.f, false, true, 1.0f, true);
    else k_.matmul_bf16(ctx_, x, s.act_h, t.wproj.h, t.n, t.c, t.f, false, true, 1.0f);
  }

  // The down product's weight gradient reads relu2(fc) straight from fc where the backend has
  // that op (else it is recomputed), and its data gradient comes out with the activation's
  // gradient applied where the backend has that one (else relu2_bwd_bf16's pass).
  void mlp_bwd(float* dln, float* dwfc, float* dwproj, Operand dx, const MlpTensors& t, const MlpScratch& s,
               float beta_w) const override {
    if (t.act != MlpAct::kRelu2) return other_mlp_bwd(dln, dwfc, dwproj, dx, t, s, beta_w);
    const int64_t N = t.n, C = t.c, F = t.f;
    const bool wgrad_fused = k_.matmul_bf16_relu2 != nullptr, dgrad_fused = k_.matmul_bf16_out_relu2_bwd != nullptr;
    if (!wgrad_fused) {
      profile::Zone z(profile::kRelu2);
      k_.relu2_fwd_bf16(ctx_, s.act_h, t.fc_h, N * F);
    }
    {
      profile::Zone z(profile::kMlpDown);
      if (wgrad_fused) k_.matmul_bf16_relu2(ctx_, dwproj, dx.h, t.fc_h, C, F, N, true, false, beta_w, false);
      else k_.matmul_bf16(ctx_, dwproj, dx.h, s.act_h, C, F, N, true, false, beta_w);
      if (dgrad_fused) k_.matmul_bf16_out_relu2_bwd(ctx_, s.act_h, t.fc_h, dx.h, t.wproj.h, N, F, C, false, false);
      else k_.matmul_bf16_out(ctx_, s.dact_h, dx.h, t.wproj.h, N, F, C, false, false);
    }
    if (!dgrad_fused) {
      profile::Zone z(profile::kRelu2);  // straight into the GEMM operand
      k_.relu2_bwd_bf16(ctx_, s.act_h, s.dact_h, t.fc_h, N * F);
    }
    profile::Zone z(profile::kMlpUp);
    k_.matmul_bf16(ctx_, dwfc, s.act_h, t.ln2.h, F, C, N, true, false, beta_w);
    k_.matmul_bf16(ctx_, dln, s.act_h, t.wfc.h, N, C, F, false, false, 0.0f);
  }

  // GELU and SwiGLU: the products in bf16 with the activation's own pass between them, except
  // GELU's where the backend fuses it into the products (matmul_bf16_out_gelu{,_bwd},
  // matmul_bf16_gelu: the up product writes the activation, the down product's weight gradient
  // reads it from fc as it packs, its data gradient writes the pre-activation's gradient); act_h
  // holds the activation (N, F), then the pre-activation's gradient (N, F or 2F); dact_h the down
  // product's data gradient where that is not fused.
  void activation(uint16_t* act, const MlpTensors& t) const {
    profile::Zone z(profile::kRelu2);
    if (t.act == MlpAct::kGelu) k_.gelu_fwd_bf16(ctx_, act, t.fc_h, t.n * t.f);
    else k_.swiglu_fwd_bf16(ctx_, act, t.fc_h, t.n, t.f);
  }
  bool gelu_fused(const MlpTensors& t) const { return t.act == MlpAct::kGelu && k_.matmul_bf16_out_gelu; }
  void other_mlp_fwd(float* x, const MlpTensors& t, const MlpScratch& s) const {
    {
      profile::Zone z(profile::kMlpUp);
      if (gelu_fused(t)) k_.matmul_bf16_out_gelu(ctx_, t.fc_h, s.act_h, t.ln2.h, t.wfc.h, t.n, t.f, t.c, false, true);
      else k_.matmul_bf16_out(ctx_, t.fc_h, t.ln2.h, t.wfc.h, t.n, t.fin(), t.c, false, true);
    }
    if (!gelu_fused(t)) activation(s.act_h, t);
    profile::Zone z(profile::kMlpDown);
    k_.matmul_bf16(ctx_, x, s.act_h, t.wproj.h, t.n, t.c, t.f, false, true, 1.0f);
  }
  void other_mlp_bwd(float* dln, float* dwfc, float* dwproj, Operand dx, const MlpTensors& t, const MlpScratch& s,
                     float beta_w) const {
    const int64_t N = t.n, C = t.c, F = t.f, FI = t.fin();
    if (!gelu_fused(t)) activation(s.act_h, t);  // recomputed rather than stored
    {
      profile::Zone z(profile::kMlpDown);
      if (gelu_fused(t)) k_.matmul_bf16_gelu(ctx_, dwproj, dx.h, t.fc_h, C, F, N, true, false, beta_w, false);
      else k_.matmul_bf16(ctx_, dwproj, dx.h, s.act_h, C, F, N, true, false, beta_w);
      if (gelu_fused(t)) k_.matmul_bf16_out_gelu_bwd(ctx_, s.act_h, t.fc_h, dx.h, t.wproj.h, N, F, C, false, false);
      else k_.matmul_bf16_out(ctx_, s.dact_h, dx.h, t.wproj.h, N, F, C, false, false);
    }
    if (!gelu_fused(t)) {
      profile::Zone z(profile::kRelu2);
      if (t.act == MlpAct::kGelu) k_.gelu_bwd_bf16(ctx_, s.act_h, s.dact_h, t.fc_h, N * F);
      else k_.swiglu_bwd_bf16(ctx_, s.act_h, s.dact_h, t.fc_h, N, F);
    }
    profile::Zone z(profile::kMlpUp);
    k_.matmul_bf16(ctx_, dwfc, s.act_h, t.ln2.h, FI, C, N, true, false, beta_w);
    k_.matmul_bf16(ctx_, dln, s.act_h, t.wfc.h, N, C, FI, false, false, 0.0f);
  }

  // Where Wq, Wk, Wv lie back to back (so do their gradients and bf16 copies), dq, dk, dv side by
  // side make one (N, HD + 2 KD) operand: both products are one GEMM each, and dln needs no
  // accumulating GEMM.
  void qkv_bwd(float* dln, const QkvGrads& g, float beta_w) const override {
    const int64_t Q = g.hd + 2 * g.kd, C = g.c;
    const bool adjacent = g.wk.h == g.wq.h + g.hd * C && g.wv.h == g.wk.h + g.kd * C && g.dwk == g.dwq + g.hd * C &&
                          g.dwv == g.dwk + g.kd * C;
    if (!adjacent) return PrecisionOps::qkv_bwd(dln, g, beta_w);
    k_.to_bf16_rows(ctx_, g.slot_q, Q, g.dq, g.n, g.hd);
    k_.to_bf16_rows(ctx_, g.slot_q + g.hd, Q, g.dk, g.n, g.kd);
    k_.to_bf16_rows(ctx_, g.slot_q + g.hd + g.kd, Q, g.dv, g.n, g.kd);
    k_.matmul_bf16(ctx_, g.dwq, g.slot_q, g.ln1.h, Q, C, g.n, true, false, beta_w);
    k_.matmul_bf16(ctx_, dln, g.slot_q, g.wq.h, g.n, C, Q, false, false, 0.0f);
  }

  // With a gradient, dL/dlogits goes straight into the bf16 operand of the head's backward GEMMs.
  Operand xent(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
               float grad_scale, uint16_t* slot) const override {
    if (grad_scale == 0.0f) {
      k_.softcap_xent(ctx_, logits, losses, targets, rows, v, cap, 0.0f);
      return {};
    }
    k_.softcap_xent_bf16(ctx_, logits, losses, targets, rows, v, cap, grad_scale, slot);
    return {nullptr, slot};
  }
};

}  // namespace

std::unique_ptr<PrecisionOps> make_bf16_ops(const KernelTable& k, const ExecContext& ctx) {
  return std::make_unique<Bf16Ops>(k, ctx);
}

}  // namespace nt
