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
  const int64_t N = int64_t(B) * T, C = cfg_.d_model;
  ModelTensors w = params_.views();
  ModelTensors g = grads_.views();
  using profile::Zone;
  // Final norm: dx = rmsnorm_bwd(dlnf) (head_loss already produced dlnf; in bf16, h0_ still holds
  // lnf's copy, read row by row before dx's copy overwrites it).
  {
    Zone z(profile::kNorm);
    norm_bwd(dx_.data(), h0_.data(), dlnf_.data(), lnf_.data(), h0_.data(), rstdf_.data(), N, false);
  }
  backout_bwd(w, g, N, accumulate);
  if (cfg_.resid_scalars) dx0_.zero();
  for (int l = cfg_.depth - 1; l >= 0; --l) {
    if (cfg_.backout && l == cfg_.backout_layer()) {  // the backout's share, at the residual it read
      k_.axpby(ctx_, dx_.data(), xback_.data(), N * C, 1.0f, 1.0f);
      refresh_dx_copy(N);
    }
    backward_layer(l, w, g, inputs, B, T, accumulate);
    resid_mix_bwd(l, w, g, N, accumulate);
    if (layer_done_) layer_done_(l);
  }
  if (cfg_.resid_scalars) k_.axpby(ctx_, dx_.data(), dx0_.data(), N * C, 1.0f, 1.0f);  // x0's uses in every mix
  smear_bwd(w, g, B, T, accumulate);
  // Embedding: x0 = rms(wte[idx]).
  {
    Zone z(profile::kEmbed);
    k_.rmsnorm_bwd(ctx_, dln_.data(), dx_.data(), ln0_.data(), rstd0_.data(), N, C, false);
    // (Tied, the head's backward wrote the table's gradient first: the lookup's adds to it.)
    if (!accumulate && !cfg_.tie_embeddings) {  // the scatter-add below starts from zeros
      Zone zero(profile::kZeroGrad);
      std::fill_n(g.wte, int64_t(cfg_.vocab_size) * C, 0.0f);
    }
    k_.embed_bwd(ctx_, g.wte, dln_.data(), inputs, N, C);
  }
}

void Gpt::backward_layer(int l, const ModelTensors& w, const ModelTensors& g, const int32_t* inputs, int B, int T,
                         bool accumulate) {
  const int64_t N = int64_t(B) * T, C = cfg_.d_model, H = cfg_.n_head, KVH = cfg_.n_kv_head, D = cfg_.head_dim,
                HD = H * D, KD = KVH * D;
  const float beta_w = accumulate ? 1.0f : 0.0f;  // the weight gradients' GEMMs: add, or overwrite
  using profile::Zone;
  LayerActs& a = acts_[size_t(l)];
  const LayerTensors& lw = w.layers[size_t(l)];
  const LayerTensors& lg = g.layers[size_t(l)];
  // MLP, reverse of: fc = ln2 Wfc^T; act = act(fc); x += act Wproj^T (dx: the norm's backward
  // made its copy).
  ops_->mlp_bwd(dln_.data(), lg.wfc, lg.wproj, saved(dx_, h0_), mlp_tensors(a, lw, N), mlp_scratch(), beta_w);
  {
    Zone z(profile::kNorm);
    norm_bwd(dx_.data(), h0_.data(), dln_.data(), a.ln2.data(), a.ln2_h.data(), a.rstd2.data(), N, true);
  }
  // Attention, reverse of: q,k,v = ln1 W^T; rope; qk-norm; attention; x += att Wo^T.
  {
    Zone z(profile::kAttnOut);
    const Operand dx = saved(dx_, h0_);
    ops_->mm(lg.wo, dx, saved(a.att, a.att_h), C, HD, N, true, false, beta_w);
    ops_->mm(datt_.data(), dx, weight(lw.wo), N, HD, C, false, false, 0.0f);
  }
  {
    Zone z(profile::kAttention);
    ops_->attention_bwd(ctx_, dq_.data(), dk_.data(), dv_.data(), datt_.data(), a.q.data(), a.k.data(), a.v.data(),
                        a.att.data(), a.lse.data(), B, T, H, KVH, D, cfg_.attention_window(l));
  }
  {
    Zone z(profile::kRope);  // QK-norm + rotary, fused
    qk_scale_bwd(a, N * HD);
    k_.rope_norm_bwd(ctx_, dq_.data(), a.q.data(), a.rstd_q.data(), cos_.data(), sin_.data(), B, T, H, D);
    k_.rope_norm_bwd(ctx_, dk_.data(), a.k.data(), a.rstd_k.data(), cos_.data(), sin_.data(), B, T, KVH, D);
  }
  value_embed_bwd(l, w, g, inputs, N, accumulate);
  {
    Zone z(profile::kQkv);
    const PrecisionOps::QkvGrads qg{.dq = dq_.data(), .dk = dk_.data(), .dv = dv_.data(),
                                    .dwq = lg.wq, .dwk = lg.wk, .dwv = lg.wv,
                                    .wq = weight(lw.wq), .wk = weight(lw.wk), .wv = weight(lw.wv),
                                    .ln1 = saved(a.ln1, a.ln1_h),
                                    .slot_q = h1_.data(), .slot_k = h2_.data(), .slot_v = h3_.data(),
                                    .n = N, .c = C, .hd = HD, .kd = KD};
    ops_->qkv_bwd(dln_.data(), qg, beta_w);
  }
  value_embed_dln(l, w, N);
  {
    Zone z(profile::kNorm);
    // (Into the embedding's gradient at layer 0, where the bf16 copy goes unused.)
    norm_bwd(dx_.data(), h0_.data(), dln_.data(), a.ln1.data(), a.ln1_h.data(), a.rstd1.data(), N, true);
  }
}

}  // namespace nt
