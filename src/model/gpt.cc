// SPDX-License-Identifier: MIT
// Gpt construction and the forward pass (gpt_backward.cc holds the backward pass).
#include <cmath>

#include "core/check.h"
#include "model/gpt.h"

namespace nt {

Gpt::Gpt(const ModelConfig& cfg, const KernelTable& kernels, int batch, int seq)
    : cfg_(cfg), k_(kernels), max_b_(batch), max_t_(seq), params_(cfg), grads_(cfg) {
  cfg.validate();
  NT_CHECK(batch > 0 && seq > 0 && seq <= cfg.seq_len, "bad activation shape B=%d T=%d", batch, seq);
  const int64_t N = int64_t(batch) * seq, C = cfg.d_model, H = cfg.n_head, KVH = cfg.n_kv_head,
                D = cfg.head_dim, F = cfg.mlp_dim();
  // Rotary tables for every position the model supports: angle = pos * base^(-2j/D).
  const int64_t half = D / 2;
  cos_.resize(size_t(cfg.seq_len * half));
  sin_.resize(size_t(cfg.seq_len * half));
  for (int64_t p = 0; p < cfg.seq_len; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double inv_freq = std::pow(cfg.rope_base, -2.0 * double(j) / double(D));
      const double a = double(p) * inv_freq;
      cos_[size_t(p * half + j)] = float(std::cos(a));
      sin_[size_t(p * half + j)] = float(std::sin(a));
    }
  ln0_.resize(N * C);
  rstd0_.resize(N);
  x_.resize(N * C);
  acts_.resize(size_t(cfg.depth));
  for (auto& a : acts_) {
    a.ln1.resize(N * C), a.rstd1.resize(N);
    a.q.resize(N * H * D), a.rstd_q.resize(N * H);
    a.k.resize(N * KVH * D), a.rstd_k.resize(N * KVH);
    a.v.resize(N * KVH * D);
    a.att.resize(N * H * D), a.lse.resize(N * H);
    a.ln2.resize(N * C), a.rstd2.resize(N);
    a.fc.resize(N * F);
  }
  lnf_.resize(N * C);
  rstdf_.resize(N);
  logits_.resize(size_t(std::min<int64_t>(N, kHeadChunkRows) * cfg.vocab_size));
  row_loss_.resize(N);
  dx_.resize(N * C), dln_.resize(N * C), dlnf_.resize(N * C);
  act_.resize(N * F), dact_.resize(N * F);
  datt_.resize(N * H * D), dq_.resize(N * H * D), dk_.resize(N * KVH * D), dv_.resize(N * KVH * D);
}

size_t Gpt::activation_bytes(const ModelConfig& c, int batch, int seq) {
  const size_t N = size_t(batch) * seq, C = c.d_model, H = c.n_head, KVH = c.n_kv_head, D = c.head_dim,
               F = c.mlp_dim();
  const size_t per_layer = N * (2 * C + 2 + H * D * 2 + H + 2 * KVH * D + KVH + H + F);
  const size_t saved = c.depth * per_layer + N * (3 * C + 2);
  const size_t scratch = std::min<size_t>(N, kHeadChunkRows) * c.vocab_size + N + N * C * 3 + 2 * N * F +
                         2 * N * H * D + 2 * N * KVH * D;
  return (saved + scratch) * sizeof(float);
}

void Gpt::forward_blocks(const int32_t* inputs, int B, int T) {
  NT_CHECK(B <= max_b_ && T <= max_t_, "batch (%d, %d) exceeds the buffers (%d, %d)", B, T, max_b_, max_t_);
  const int64_t N = int64_t(B) * T, C = cfg_.d_model, H = cfg_.n_head, KVH = cfg_.n_kv_head,
                D = cfg_.head_dim, HD = H * D, KD = KVH * D, F = cfg_.mlp_dim();
  const float eps = float(cfg_.norm_eps);
  for (int64_t i = 0; i < N; ++i)
    NT_CHECK(inputs[i] >= 0 && inputs[i] < cfg_.vocab_size, "token id %d outside the vocabulary (%d)", inputs[i],
             cfg_.vocab_size);
  ModelTensors w = params_.views();
  // x = rms(wte[idx]); ln0 keeps the normalised embedding for backward.
  k_.embed_fwd(x_.data(), inputs, w.wte, N, C);
  k_.rmsnorm_fwd(ln0_.data(), rstd0_.data(), x_.data(), N, C, eps);
  std::copy_n(ln0_.data(), N * C, x_.data());
  for (int l = 0; l < cfg_.depth; ++l) {
    LayerActs& a = acts_[size_t(l)];
    const LayerTensors& lw = w.layers[size_t(l)];
    // Attention: x += c_proj(attn(norm(rope(q)), norm(rope(k)), v)).
    k_.rmsnorm_fwd(a.ln1.data(), a.rstd1.data(), x_.data(), N, C, eps);
    k_.matmul(a.q.data(), a.ln1.data(), lw.wq, N, HD, C, false, true, 0.0f);
    k_.matmul(a.k.data(), a.ln1.data(), lw.wk, N, KD, C, false, true, 0.0f);
    k_.matmul(a.v.data(), a.ln1.data(), lw.wv, N, KD, C, false, true, 0.0f);
    k_.rope_fwd(a.q.data(), cos_.data(), sin_.data(), B, T, H, D);
    k_.rope_fwd(a.k.data(), cos_.data(), sin_.data(), B, T, KVH, D);
    k_.rmsnorm_fwd(a.q.data(), a.rstd_q.data(), a.q.data(), N * H, D, eps);
    k_.rmsnorm_fwd(a.k.data(), a.rstd_k.data(), a.k.data(), N * KVH, D, eps);
    k_.attention_fwd(a.att.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(), B, T, H, KVH, D);
    k_.matmul(x_.data(), a.att.data(), lw.wo, N, C, HD, false, true, 1.0f);
    // MLP: x += c_proj(relu(c_fc(norm(x)))^2).
    k_.rmsnorm_fwd(a.ln2.data(), a.rstd2.data(), x_.data(), N, C, eps);
    k_.matmul(a.fc.data(), a.ln2.data(), lw.wfc, N, F, C, false, true, 0.0f);
    k_.relu2_fwd(act_.data(), a.fc.data(), N * F);
    k_.matmul(x_.data(), act_.data(), lw.wproj, N, C, F, false, true, 1.0f);
  }
  k_.rmsnorm_fwd(lnf_.data(), rstdf_.data(), x_.data(), N, C, eps);
}

double Gpt::head_loss(const int32_t* targets, int64_t N, float grad_scale, float* losses) {
  const int64_t C = cfg_.d_model, V = cfg_.vocab_size;
  ModelTensors w = params_.views();
  ModelTensors g = grads_.views();
  double total = 0;
  for (int64_t r0 = 0; r0 < N; r0 += kHeadChunkRows) {
    const int64_t rows = std::min(kHeadChunkRows, N - r0);
    k_.matmul(logits_.data(), lnf_.data() + r0 * C, w.lm_head, rows, V, C, false, true, 0.0f);
    k_.softcap_xent(logits_.data(), losses + r0, targets + r0, rows, V, float(cfg_.softcap), grad_scale);
    for (int64_t r = 0; r < rows; ++r) total += losses[r0 + r];
    if (grad_scale != 0.0f) {
      // logits_ now holds dL/dlogits: dW_head += dlogits^T lnf; dlnf = dlogits W_head.
      k_.matmul(g.lm_head, logits_.data(), lnf_.data() + r0 * C, V, C, rows, true, false, 1.0f);
      k_.matmul(dlnf_.data() + r0 * C, logits_.data(), w.lm_head, rows, C, V, false, false, 0.0f);
    }
  }
  return total;
}

double Gpt::forward_loss(const int32_t* inputs, const int32_t* targets, int B, int T, float* losses) {
  forward_blocks(inputs, B, T);
  return head_loss(targets, int64_t(B) * T, 0.0f, losses);
}

double Gpt::forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T, double grad_scale) {
  const int64_t N = int64_t(B) * T;
  int64_t valid = 0;
  for (int64_t i = 0; i < N; ++i) {
    NT_CHECK(targets[i] < cfg_.vocab_size, "target id %d outside the vocabulary (%d)", targets[i], cfg_.vocab_size);
    valid += targets[i] >= 0;
  }
  if (valid == 0) return 0.0;
  forward_blocks(inputs, B, T);
  const double total = head_loss(targets, N, float(grad_scale / double(valid)), row_loss_.data());
  backward_blocks(inputs, B, T);
  return total / double(valid);
}

void Gpt::forward_logits(const int32_t* inputs, int B, int T, float* logits) {
  forward_blocks(inputs, B, T);
  const int64_t N = int64_t(B) * T, V = cfg_.vocab_size;
  ModelTensors w = params_.views();
  k_.matmul(logits, lnf_.data(), w.lm_head, N, V, cfg_.d_model, false, true, 0.0f);
  const float cap = float(cfg_.softcap);
  for (int64_t i = 0; i < N * V; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
}

}  // namespace nt
