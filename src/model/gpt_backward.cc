// SPDX-License-Identifier: MIT
// The backward pass: the forward's steps of gpt.cc in exact reverse order. Parameter gradients
// accumulate (+=), or are overwritten (accumulate false: a step's first micro-batch); dx_ is the
// gradient of the residual stream.
#include <algorithm>

#include "core/check.h"
#include "model/gpt.h"
#include "profile/profile.h"

namespace nt {

void Gpt::backward_blocks(const int32_t* inputs, int B, int T, bool accumulate) {
  const int64_t N = int64_t(B) * T, C = cfg_.d_model, H = cfg_.n_head, KVH = cfg_.n_kv_head,
                D = cfg_.head_dim, HD = H * D, KD = KVH * D, F = cfg_.mlp_dim();
  ModelTensors w = params_.views();
  ModelTensors g = grads_.views();
  const float beta_w = accumulate ? 1.0f : 0.0f;  // the weight gradients' GEMMs: add, or overwrite
  using profile::Zone;
  // Where the backend has it, the activation's gradient comes out of the down product's data
  // gradient itself.
  const bool relu2_in_down = precision_ == Precision::kBf16 && k_.matmul_bf16_out_relu2_bwd;
  // Final norm: dx = rmsnorm_bwd(dlnf) (head_loss already produced dlnf; in bf16, h0_ still holds
  // lnf's copy, read row by row before dx's copy overwrites it).
  {
    Zone z(profile::kNorm);
    norm_bwd(dx_.data(), h0_.data(), dlnf_.data(), lnf_.data(), h0_.data(), rstdf_.data(), N, false);
  }
  for (int l = cfg_.depth - 1; l >= 0; --l) {
    const LayerActs& a = acts_[size_t(l)];
    const LayerTensors& lw = w.layers[size_t(l)];
    const LayerTensors& lg = g.layers[size_t(l)];
    // MLP, reverse of: fc = ln2 Wfc^T; act = relu2(fc); x += act Wproj^T.
    Operand h{act_.data(), nullptr};  // relu2(fc), recomputed rather than stored
    if (!relu2_in_wgrad()) {
      Zone z(profile::kRelu2);
      if (precision_ == Precision::kBf16) {
        k_.relu2_fwd_bf16(h1_.data(), a.fc_h.data(), N * F);
        h.h = h1_.data();
      } else {
        k_.relu2_fwd(act_.data(), a.fc.data(), N * F);
      }
    }
    {
      Zone z(profile::kMlpDown);
      const Operand dx = saved(dx_, h0_);  // the norm's backward made its copy
      if (relu2_in_wgrad()) k_.matmul_bf16_relu2(lg.wproj, dx.h, a.fc_h.data(), C, F, N, true, false, beta_w, false);
      else mm(lg.wproj, dx, h, C, F, N, true, false, beta_w);
      if (relu2_in_down) {  // the activation's gradient out of the product itself
        k_.matmul_bf16_out_relu2_bwd(h1_.data(), a.fc_h.data(), dx.h, weight(lw.wproj).h, N, F, C, false, false);
      } else if (precision_ == Precision::kBf16) {
        k_.matmul_bf16_out(dact_h_.data(), dx.h, weight(lw.wproj).h, N, F, C, false, false);
      } else {
        mm(dact_.data(), dx, weight(lw.wproj), N, F, C, false, false, 0.0f);
      }
    }
    Operand dact{dact_.data(), nullptr};
    if (relu2_in_down) {
      dact.h = h1_.data();
    } else {
      Zone z(profile::kRelu2);
      if (precision_ == Precision::kBf16) {  // straight into the GEMM operand
        k_.relu2_bwd_bf16(h1_.data(), dact_h_.data(), a.fc_h.data(), N * F);
        dact.h = h1_.data();
      } else {
        k_.relu2_bwd(dact_.data(), dact_.data(), a.fc.data(), N * F);
      }
    }
    {
      Zone z(profile::kMlpUp);
      mm(lg.wfc, dact, saved(a.ln2, a.ln2_h), F, C, N, true, false, beta_w);
      mm(dln_.data(), dact, weight(lw.wfc), N, C, F, false, false, 0.0f);
    }
    {
      Zone z(profile::kNorm);
      norm_bwd(dx_.data(), h0_.data(), dln_.data(), a.ln2.data(), a.ln2_h.data(), a.rstd2.data(), N, true);
    }
    // Attention, reverse of: q,k,v = ln1 W^T; rope; qk-norm; attention; x += att Wo^T.
    {
      Zone z(profile::kAttnOut);
      const Operand dx = saved(dx_, h0_);
      mm(lg.wo, dx, saved(a.att, a.att_h), C, HD, N, true, false, beta_w);
      mm(datt_.data(), dx, weight(lw.wo), N, HD, C, false, false, 0.0f);
    }
    {
      Zone z(profile::kAttention);
      (precision_ == Precision::kBf16 ? k_.attention_bwd_bf16 : k_.attention_bwd)(
          dq_.data(), dk_.data(), dv_.data(), datt_.data(), a.q.data(), a.k.data(), a.v.data(), a.att.data(),
          a.lse.data(), B, T, H, KVH, D);
    }
    {
      Zone z(profile::kRope);  // QK-norm + rotary, fused
      k_.rope_norm_bwd(dq_.data(), a.q.data(), a.rstd_q.data(), cos_.data(), sin_.data(), B, T, H, D);
      k_.rope_norm_bwd(dk_.data(), a.k.data(), a.rstd_k.data(), cos_.data(), sin_.data(), B, T, KVH, D);
    }
    {
      Zone z(profile::kQkv);
      const Operand ln1 = saved(a.ln1, a.ln1_h);
      if (precision_ == Precision::kBf16 && lw.wk == lw.wq + HD * C && lw.wv == lw.wk + KD * C) {
        // Wq, Wk, Wv lie back to back (so do their gradients and bf16 copies): with dq, dk, dv
        // side by side as one (N, HD + 2 KD) operand, both products are one GEMM each, and
        // dln = [dq dk dv] [Wq; Wk; Wv] needs no accumulating GEMM.
        const int64_t Q = HD + 2 * KD;
        k_.to_bf16_rows(h1_.data(), Q, dq_.data(), N, HD);
        k_.to_bf16_rows(h1_.data() + HD, Q, dk_.data(), N, KD);
        k_.to_bf16_rows(h1_.data() + HD + KD, Q, dv_.data(), N, KD);
        const Operand dqkv{nullptr, h1_.data()};
        mm(lg.wq, dqkv, ln1, Q, C, N, true, false, beta_w);
        mm(dln_.data(), dqkv, weight(lw.wq), N, C, Q, false, false, 0.0f);
      } else {
        const Operand dq = act(h1_, dq_.data(), N * HD), dk = act(h2_, dk_.data(), N * KD),
                      dv = act(h3_, dv_.data(), N * KD);
        mm(lg.wq, dq, ln1, HD, C, N, true, false, beta_w);
        mm(lg.wk, dk, ln1, KD, C, N, true, false, beta_w);
        mm(lg.wv, dv, ln1, KD, C, N, true, false, beta_w);
        mm(dln_.data(), dq, weight(lw.wq), N, C, HD, false, false, 0.0f);
        mm(dln_.data(), dk, weight(lw.wk), N, C, KD, false, false, 1.0f);
        mm(dln_.data(), dv, weight(lw.wv), N, C, KD, false, false, 1.0f);
      }
    }
    {
      Zone z(profile::kNorm);
      // (Into the embedding's gradient at layer 0, where the bf16 copy goes unused.)
      norm_bwd(dx_.data(), h0_.data(), dln_.data(), a.ln1.data(), a.ln1_h.data(), a.rstd1.data(), N, true);
    }
  }
  // Embedding: x0 = rms(wte[idx]).
  {
    Zone z(profile::kEmbed);
    k_.rmsnorm_bwd(dln_.data(), dx_.data(), ln0_.data(), rstd0_.data(), N, C, false);
    if (!accumulate) {  // the scatter-add below starts from zeros
      Zone zero(profile::kZeroGrad);
      std::fill_n(g.wte, int64_t(cfg_.vocab_size) * C, 0.0f);
    }
    k_.embed_bwd(g.wte, dln_.data(), inputs, N, C);
  }
}

}  // namespace nt
