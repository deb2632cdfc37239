// SPDX-License-Identifier: MIT
// Gpt construction and the forward pass (gpt_backward.cc holds the backward pass).
#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/system.h"
#include "profile/profile.h"

namespace nt {

Gpt::Gpt(const ModelConfig& cfg, const KernelTable& kernels, int batch, int seq, Precision precision)
    : cfg_(cfg),
      k_(kernels),
      ctx_(job_threads()),
      ops_(PrecisionOps::make(kernels, ctx_, precision)),
      max_b_(batch),
      max_t_(seq),
      params_(cfg),
      grads_(cfg) {
  cfg.validate();
  NT_CHECK(batch > 0 && seq > 0 && seq <= cfg.seq_len, "bad activation shape B=%d T=%d", batch, seq);
  const bool bf16 = precision == Precision::kBf16;  // which buffers the op set reads and writes
  const int64_t N = int64_t(batch) * seq, C = cfg.d_model, H = cfg.n_head, KVH = cfg.n_kv_head,
                D = cfg.head_dim, F = cfg.mlp_dim(), FI = cfg.mlp_in_rows();
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
    a.rstd1.resize(N), a.rstd2.resize(N);
    a.q.resize(N * H * D), a.rstd_q.resize(N * H);
    a.k.resize(N * KVH * D), a.rstd_k.resize(N * KVH);
    a.v.resize(N * KVH * D);
    a.att.resize(N * H * D), a.lse.resize(N * H);
    // bf16 runs keep the normalised activations only as their bf16 GEMM operands, which the
    // norms' backward reads too (2 N C floats a layer fewer: 256 MiB at depth 8, batch 32).
    if (bf16) {
      a.fc_h.resize(N * FI);
      a.ln1_h.resize(N * C), a.att_h.resize(N * H * D), a.ln2_h.resize(N * C);
    } else {
      a.fc.resize(N * FI);
      a.ln1.resize(N * C), a.ln2.resize(N * C);
    }
    if (cfg.resid_scalars) a.xres.resize(N * C);
  }
  for (int l = 0; l < cfg.depth; ++l)
    if (cfg.has_value_embed(l)) acts_[size_t(l)].ve_g.resize(N * KVH);
  if (cfg.value_embeds) ve_dz_.resize(N * KVH);
  if (cfg.resid_scalars) x0_.resize(N * C), dx0_.resize(N * C);
  if (cfg.smear) smear_sig_.resize(N);
  if (cfg.backout) xback_.resize(N * C);
  lnf_.resize(N * C);
  rstdf_.resize(N);
  logits_.resize(size_t(std::min<int64_t>(N, head_chunk_rows(cfg.vocab_size)) * cfg.vocab_size));
  row_loss_.resize(N);
  dx_.resize(N * C), dln_.resize(N * C), dlnf_.resize(N * C);
  // (A backend whose down product writes the activation's gradient itself needs no buffer for
  // the product: activation_bytes's count of it is then an upper bound.)
  const bool dact_fused = (cfg.mlp == "relu2" && k_.matmul_bf16_out_relu2_bwd) ||
                          (cfg.mlp == "gelu" && k_.matmul_bf16_out_gelu_bwd);
  if (bf16) dact_h_.resize(dact_fused ? 0 : N * F);
  else act_.resize(N * FI), dact_.resize(N * F);
  datt_.resize(N * H * D), dq_.resize(N * H * D), dk_.resize(N * KVH * D), dv_.resize(N * KVH * D);
  if (bf16) {
    wbf_.resize(params_.numel());
    h0_.resize(size_t(N * std::max(C, H * D)));
    h1_.resize(size_t(N * std::max(FI, H * D + 2 * KVH * D)));  // the MLP's activation, then its gradient
    h2_.resize(size_t(std::max(N * KVH * D, std::min<int64_t>(N, head_chunk_rows(cfg.vocab_size)) * cfg.vocab_size)));
    h3_.resize(size_t(N * KVH * D));
    if (k_.packed_b_bf16_size && k_.pack_b_bf16 && k_.matmul_bf16_packed_b) {
      const int64_t V = cfg.vocab_size;
      head_fwd_b_.resize(size_t(k_.packed_b_bf16_size(ctx_, V, C)));
      head_dgrad_b_.resize(size_t(k_.packed_b_bf16_size(ctx_, C, V)));
    }
  }
}

Operand Gpt::weight(const float* p) const {
  return ops_->pair(p, wbf_.size() == 0 ? nullptr : wbf_.data() + (p - params_.data.data()));
}

MlpAct Gpt::mlp_act() const {
  return cfg_.mlp == "swiglu" ? MlpAct::kSwiglu : cfg_.mlp == "gelu" ? MlpAct::kGelu : MlpAct::kRelu2;
}

MlpTensors Gpt::mlp_tensors(LayerActs& a, const LayerTensors& lw, int64_t n) {
  return {a.fc.data(), a.fc_h.data(), saved(a.ln2, a.ln2_h), weight(lw.wfc), weight(lw.wproj), n, cfg_.d_model,
          cfg_.mlp_dim(), mlp_act()};
}

size_t Gpt::activation_bytes(const ModelConfig& c, int batch, int seq, Precision precision) {
  const size_t N = size_t(batch) * seq, C = c.d_model, H = c.n_head, KVH = c.n_kv_head, D = c.head_dim,
               F = c.mlp_dim();
  const bool in_bf16 = precision == Precision::kBf16;
  // fp32 runs keep the MLP's pre-activation (per layer) and its activation and gradient
  // (scratch) in fp32, and per layer ln1 and ln2; bf16 runs keep the first and the gradient in
  // bf16, and per layer only the bf16 operands of ln1, att and ln2.
  const size_t per_layer =
      N * ((in_bf16 ? 0 : 2 * C) + 2 + H * D * 2 + H + 2 * KVH * D + KVH + H + (in_bf16 ? 0 : F));
  // The variants: SwiGLU's second input half (fp32 runs), the residual before each scalar mix,
  // x0 and its gradient, the smear's sigmoid, the backout's residual, the value embeddings' gates.
  const size_t FI = c.mlp_in_rows(), ve_layers = c.value_embeds ? size_t(c.depth + 1) / 2 : 0;
  const size_t variants = (in_bf16 ? 0 : c.depth * N * (FI - F) + N * (FI - F)) +
                          (c.resid_scalars ? (c.depth + 2) * N * C : 0) + (c.smear ? N : 0) +
                          (c.backout ? N * C : 0) + (ve_layers + (c.value_embeds ? 1 : 0)) * N * KVH;
  const size_t saved = c.depth * per_layer + N * (3 * C + 2) + variants;
  const size_t scratch = std::min<size_t>(N, size_t(head_chunk_rows(c.vocab_size))) * c.vocab_size + N + N * C * 3 +
                         (in_bf16 ? 0 : 2 * N * F) + 2 * N * H * D + 2 * N * KVH * D;
  size_t bf16 = 0;  // elements of 2 bytes
  // (With the head's weights packed twice, each padded to whole 32 x 32 blocks: an upper bound
  // where the backend packs none.)
  auto round32 = [](size_t x) { return (x + 31) / 32 * 32; };
  const size_t head_packed = round32(size_t(c.vocab_size)) * round32(C);
  if (in_bf16)
    bf16 = size_t(count_params(c)) + N * std::max(C, H * D) + N * std::max(FI, H * D + 2 * KVH * D) +
           std::max(N * KVH * D, std::min<size_t>(N, size_t(head_chunk_rows(c.vocab_size))) * c.vocab_size) + N * KVH * D +
           c.depth * N * FI + N * F + c.depth * N * (2 * C + H * D) + 2 * head_packed;
  return (saved + scratch) * sizeof(float) + bf16 * 2;
}

void Gpt::forward_blocks(const int32_t* inputs, int B, int T) {
  NT_CHECK(B <= max_b_ && T <= max_t_, "batch (%d, %d) exceeds the buffers (%d, %d)", B, T, max_b_, max_t_);
  const int64_t N = int64_t(B) * T, C = cfg_.d_model;
  for (int64_t i = 0; i < N; ++i)
    NT_CHECK(inputs[i] >= 0 && inputs[i] < cfg_.vocab_size, "token id %d outside the vocabulary (%d)", inputs[i],
             cfg_.vocab_size);
  ModelTensors w = params_.views();
  {
    profile::Zone z(profile::kToBf16);
    ops_->round_weights(wbf_.data(), params_.data.data(), int64_t(params_.numel()));
  }
  // x = rms(wte[idx]); ln0 keeps the normalised embedding for backward.
  {
    profile::Zone z(profile::kEmbed);
    k_.embed_fwd(ctx_, x_.data(), inputs, w.wte, N, C);
    k_.rmsnorm_fwd(ctx_, ln0_.data(), rstd0_.data(), x_.data(), N, C, float(cfg_.norm_eps));
    std::copy_n(ln0_.data(), N * C, x_.data());
    smear_fwd(w, B, T);
    if (cfg_.resid_scalars) std::copy_n(x_.data(), N * C, x0_.data());
  }
  for (int l = 0; l < cfg_.depth; ++l) {
    resid_mix_fwd(l, w, N);
    forward_layer(l, w, inputs, B, T);
    if (cfg_.backout && l == cfg_.backout_layer()) std::copy_n(x_.data(), N * C, xback_.data());
  }
  backout_fwd(w, N);
  {
    profile::Zone z(profile::kNorm);
    norm_fwd(lnf_.data(), h0_.data(), rstdf_.data(), x_.data(), N);
  }
}

void Gpt::forward_layer(int l, const ModelTensors& w, const int32_t* inputs, int B, int T) {
  const int64_t N = int64_t(B) * T, C = cfg_.d_model, H = cfg_.n_head, KVH = cfg_.n_kv_head, D = cfg_.head_dim,
                HD = H * D, KD = KVH * D;
  const float eps = float(cfg_.norm_eps);
  LayerActs& a = acts_[size_t(l)];
  const LayerTensors& lw = w.layers[size_t(l)];
  // Attention: x += c_proj(attn(norm(rope(q)), norm(rope(k)), v)).
  {
    profile::Zone z(profile::kNorm);
    norm_fwd(a.ln1.data(), a.ln1_h.data(), a.rstd1.data(), x_.data(), N);
  }
  {
    profile::Zone z(profile::kQkv);
    const Operand ln1 = saved(a.ln1, a.ln1_h);
    ops_->mm(a.q.data(), ln1, weight(lw.wq), N, HD, C, false, true, 0.0f);
    ops_->mm(a.k.data(), ln1, weight(lw.wk), N, KD, C, false, true, 0.0f);
    ops_->mm(a.v.data(), ln1, weight(lw.wv), N, KD, C, false, true, 0.0f);
    value_embed_fwd(l, w, inputs, N);
  }
  {
    profile::Zone z(profile::kRope);  // rotary + QK-norm, fused
    k_.rope_norm_fwd(ctx_, a.q.data(), a.rstd_q.data(), cos_.data(), sin_.data(), B, T, H, D, eps);
    k_.rope_norm_fwd(ctx_, a.k.data(), a.rstd_k.data(), cos_.data(), sin_.data(), B, T, KVH, D, eps);
    qk_scale_fwd(a, N * HD);
  }
  {
    profile::Zone z(profile::kAttention);
    ops_->attention_fwd(ctx_, a.att.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(), B, T, H, KVH, D,
                        cfg_.attention_window(l));
  }
  {
    profile::Zone z(profile::kAttnOut);
    ops_->mm(x_.data(), ops_->convert(a.att_h.data(), a.att.data(), N * HD), weight(lw.wo), N, C, HD, false, true,
             1.0f);
  }
  // MLP: x += c_proj(act(c_fc(norm(x)))).
  {
    profile::Zone z(profile::kNorm);
    norm_fwd(a.ln2.data(), a.ln2_h.data(), a.rstd2.data(), x_.data(), N);
  }
  ops_->mlp_fwd(x_.data(), mlp_tensors(a, lw, N), mlp_scratch());
}

double Gpt::head_loss(const int32_t* targets, int64_t N, float grad_scale, float* losses, bool accumulate) {
  const int64_t C = cfg_.d_model, V = cfg_.vocab_size;
  ModelTensors w = params_.views();
  ModelTensors g = grads_.views();
  double total = 0;
  const Operand lnf = saved(lnf_, h0_);  // the final norm wrote its copy into h0_
  const Operand head = weight(w.lm_head);
  const int64_t chunk = head_chunk_rows(V);
  // Where the backend packs B operands, the head's weights are packed here once for all chunks
  // (each chunk's two products would otherwise pack all of them again).
  const bool packed = head_fwd_b_.size() > 0;
  if (packed) {
    profile::Zone z(profile::kHead);
    k_.pack_b_bf16(ctx_, head_fwd_b_.data(), head.h, V, C, true);
    if (grad_scale != 0.0f) k_.pack_b_bf16(ctx_, head_dgrad_b_.data(), head.h, C, V, false);
  }
  for (int64_t r0 = 0; r0 < N; r0 += chunk) {
    const int64_t rows = std::min(chunk, N - r0);
    const Operand lnf_r{lnf.f + r0 * C, lnf.h ? lnf.h + r0 * C : nullptr};
    {
      profile::Zone z(profile::kHead);
      if (packed) k_.matmul_bf16_packed_b(ctx_, logits_.data(), lnf_r.h, head_fwd_b_.data(), rows, V, C, false, 0.0f);
      else ops_->mm(logits_.data(), lnf_r, head, rows, V, C, false, true, 0.0f);
    }
    // dL/dlogits, where there is a gradient: the head's backward GEMMs' operand.
    Operand dlogits;
    {
      profile::Zone z(profile::kLoss);
      dlogits = ops_->xent(logits_.data(), losses + r0, targets + r0, rows, V, float(cfg_.softcap), grad_scale,
                           h2_.data());
    }
    for (int64_t r = 0; r < rows; ++r) total += losses[r0 + r];
    if (grad_scale != 0.0f) {
      profile::Zone z(profile::kHead);
      // dW_head += dlogits^T lnf; dlnf = dlogits W_head.
      ops_->mm(g.lm_head, dlogits, lnf_r, V, C, rows, true, false, accumulate || r0 > 0 ? 1.0f : 0.0f);
      if (packed)
        k_.matmul_bf16_packed_b(ctx_, dlnf_.data() + r0 * C, dlogits.h, head_dgrad_b_.data(), rows, C, V, false, 0.0f);
      else ops_->mm(dlnf_.data() + r0 * C, dlogits, head, rows, C, V, false, false, 0.0f);
    }
  }
  return total;
}

double Gpt::forward_loss(const int32_t* inputs, const int32_t* targets, int B, int T, float* losses) {
  forward_blocks(inputs, B, T);
  return head_loss(targets, int64_t(B) * T, 0.0f, losses);
}

double Gpt::forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T, double grad_scale,
                             bool accumulate) {
  const int64_t N = int64_t(B) * T;
  int64_t valid = 0;
  for (int64_t i = 0; i < N; ++i) {
    NT_CHECK(targets[i] < cfg_.vocab_size, "target id %d outside the vocabulary (%d)", targets[i], cfg_.vocab_size);
    valid += targets[i] >= 0;
  }
  if (valid == 0) {  // no gradient: zero, or nothing to add
    if (!accumulate) grads_.data.zero();
    return 0.0;
  }
  double total = 0;
  {
    // The head's backward runs fused inside head_loss: it is counted in the forward phase.
    profile::Zone z(profile::kForward);
    forward_blocks(inputs, B, T);
    total = head_loss(targets, N, float(grad_scale / double(valid)), row_loss_.data(), accumulate);
  }
  {
    profile::Zone z(profile::kBackward);
    backward_blocks(inputs, B, T, accumulate);
  }
  return total / double(valid);
}

void Gpt::forward_logits(const int32_t* inputs, int B, int T, float* logits) {
  forward_blocks(inputs, B, T);
  const int64_t N = int64_t(B) * T, V = cfg_.vocab_size;
  ModelTensors w = params_.views();
  k_.matmul(ctx_, logits, lnf_.data(), w.lm_head, N, V, cfg_.d_model, false, true, 0.0f);
  const float cap = float(cfg_.softcap);
  if (cap > 0)
    for (int64_t i = 0; i < N * V; ++i) logits[i] = cap * std::tanh(logits[i] / cap);
}

}  // namespace nt
