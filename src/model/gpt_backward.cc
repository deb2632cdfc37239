// SPDX-License-Identifier: MIT
// The backward pass: the forward's steps of gpt.cc in exact reverse order. Parameter gradients
// accumulate (+=); dx_ is the gradient of the residual stream.
#include "core/check.h"
#include "model/gpt.h"

namespace nt {

void Gpt::backward_blocks(const int32_t* inputs, int B, int T) {
  const int64_t N = int64_t(B) * T, C = cfg_.d_model, H = cfg_.n_head, KVH = cfg_.n_kv_head,
                D = cfg_.head_dim, HD = H * D, KD = KVH * D, F = cfg_.mlp_dim();
  ModelTensors w = params_.views();
  ModelTensors g = grads_.views();
  // Final norm: dx = rmsnorm_bwd(dlnf) (head_loss already produced dlnf).
  k_.rmsnorm_bwd(dx_.data(), dlnf_.data(), lnf_.data(), rstdf_.data(), N, C, false);
  for (int l = cfg_.depth - 1; l >= 0; --l) {
    const LayerActs& a = acts_[size_t(l)];
    const LayerTensors& lw = w.layers[size_t(l)];
    const LayerTensors& lg = g.layers[size_t(l)];
    // MLP, reverse of: fc = ln2 Wfc^T; act = relu2(fc); x += act Wproj^T.
    k_.relu2_fwd(act_.data(), a.fc.data(), N * F);  // recomputed, not stored
    k_.matmul(lg.wproj, dx_.data(), act_.data(), C, F, N, true, false, 1.0f);
    k_.matmul(dact_.data(), dx_.data(), lw.wproj, N, F, C, false, false, 0.0f);
    k_.relu2_bwd(dact_.data(), dact_.data(), a.fc.data(), N * F);
    k_.matmul(lg.wfc, dact_.data(), a.ln2.data(), F, C, N, true, false, 1.0f);
    k_.matmul(dln_.data(), dact_.data(), lw.wfc, N, C, F, false, false, 0.0f);
    k_.rmsnorm_bwd(dx_.data(), dln_.data(), a.ln2.data(), a.rstd2.data(), N, C, true);
    // Attention, reverse of: q,k,v = ln1 W^T; rope; qk-norm; attention; x += att Wo^T.
    k_.matmul(lg.wo, dx_.data(), a.att.data(), C, HD, N, true, false, 1.0f);
    k_.matmul(datt_.data(), dx_.data(), lw.wo, N, HD, C, false, false, 0.0f);
    k_.attention_bwd(dq_.data(), dk_.data(), dv_.data(), datt_.data(), a.q.data(), a.k.data(), a.v.data(),
                     a.att.data(), a.lse.data(), B, T, H, KVH, D);
    k_.rmsnorm_bwd(dq_.data(), dq_.data(), a.q.data(), a.rstd_q.data(), N * H, D, false);
    k_.rmsnorm_bwd(dk_.data(), dk_.data(), a.k.data(), a.rstd_k.data(), N * KVH, D, false);
    k_.rope_bwd(dq_.data(), cos_.data(), sin_.data(), B, T, H, D);
    k_.rope_bwd(dk_.data(), cos_.data(), sin_.data(), B, T, KVH, D);
    k_.matmul(lg.wq, dq_.data(), a.ln1.data(), HD, C, N, true, false, 1.0f);
    k_.matmul(lg.wk, dk_.data(), a.ln1.data(), KD, C, N, true, false, 1.0f);
    k_.matmul(lg.wv, dv_.data(), a.ln1.data(), KD, C, N, true, false, 1.0f);
    k_.matmul(dln_.data(), dq_.data(), lw.wq, N, C, HD, false, false, 0.0f);
    k_.matmul(dln_.data(), dk_.data(), lw.wk, N, C, KD, false, false, 1.0f);
    k_.matmul(dln_.data(), dv_.data(), lw.wv, N, C, KD, false, false, 1.0f);
    k_.rmsnorm_bwd(dx_.data(), dln_.data(), a.ln1.data(), a.rstd1.data(), N, C, true);
  }
  // Embedding: x0 = rms(wte[idx]).
  k_.rmsnorm_bwd(dln_.data(), dx_.data(), ln0_.data(), rstd0_.data(), N, C, false);
  k_.embed_bwd(g.wte, dln_.data(), inputs, N, C);
}

}  // namespace nt
