// SPDX-License-Identifier: MIT
// The baseline GPT: explicit forward and backward over buffers sized up front.
//
//   x = rms(wte[idx]);  for each block: x += attn(rms(x)); x += mlp(rms(x))
//   logits = 15 tanh((rms(x) @ lm_head^T) / 15);  loss = mean cross-entropy
//   attn: q, k, v projections -> rotary (half split) -> RMSNorm on q, k -> causal GQA -> c_proj
//   mlp:  c_fc -> relu^2 -> c_proj.   No biases, no learnable norm weights.
//
// ModelVariants (config.h) switch on, each independently: a q/k scale after the QK-norm (folded
// into q as its square), another soft-cap or none, GELU or SwiGLU, a head tied to wte, per-layer
// residual scalars, smear, backout and value embeddings (gpt_variants.cc).
//
// The output head and the loss are fused and processed in row chunks, so the (B*T, V) logits
// are never all held at once; in training, the head's backward runs inside that same pass.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "kernels/kernels.h"
#include "kernels/precision.h"
#include "model/config.h"
#include "model/params.h"
#include "model/precision_ops.h"

namespace nt {

// Saved activations of one block, (N = B*T rows).
struct LayerActs {
  Buffer<float> ln1, rstd1;       // (N, C), (N)   input of attention, normalised (ln1: fp32 runs)
  Buffer<float> q, rstd_q;        // (N, H*D), (N*H)   after rotary + QK-norm
  Buffer<float> k, rstd_k;        // (N, KVH*D), (N*KVH)
  Buffer<float> v;                // (N, KVH*D)
  Buffer<float> att, lse;         // (N, H*D), (B, H, T)
  Buffer<float> ln2, rstd2;       // (N, C), (N)   (ln2: fp32 runs)
  Buffer<float> fc;               // (N, F or 2F)   pre-activation (fp32 runs)
  Buffer<uint16_t> fc_h;          // (N, F or 2F)   the same in bf16 runs: a bf16 GEMM output
  // bf16 runs: the GEMM operands made from ln1, att and ln2 in the forward, kept for the
  // backward's weight gradients instead of being converted again there.
  Buffer<uint16_t> ln1_h, att_h, ln2_h;  // (N, C), (N, H*D), (N, C)
  // Variants: the residual before this block's scalar mix (N, C); the value-embedding gate
  // 3 sigmoid(.) (N, KVH).
  Buffer<float> xres, ve_g;
};

class Gpt {
 public:
  // batch, seq: the largest (B, T) the activation buffers must hold.
  // Its ops run with a context of job_threads() threads (core/system.h) that the model owns.
  Gpt(const ModelConfig& cfg, const KernelTable& kernels, int batch, int seq,
      Precision precision = Precision::kFp32);
  Precision precision() const { return ops_->precision(); }

  const ModelConfig& config() const { return cfg_; }
  ParamArena& params() { return params_; }
  ParamArena& grads() { return grads_; }
  const KernelTable& kernels() const { return k_; }
  // The context the model runs its ops with; callers that run ops on the model's buffers from
  // the same thread (the sampler, the evaluators) use it too.
  const ExecContext& exec() const { return ctx_; }

  // Forward + backward on one micro-batch; parameter gradients are of (mean loss over valid
  // targets) * grad_scale, and ACCUMULATE into grads(), or with accumulate false overwrite them
  // (a step's first micro-batch: no zeroing pass over the gradients first; the GEMMs that write
  // them do not read them). Returns the mean loss.
  double forward_backward(const int32_t* inputs, const int32_t* targets, int B, int T, double grad_scale,
                          bool accumulate = true);
  // Forward only; writes the per-position loss (0 where target < 0) into losses (B*T) and
  // returns the sum of losses.
  double forward_loss(const int32_t* inputs, const int32_t* targets, int B, int T, float* losses);
  // Forward only; logits (B*T, V) after the soft-cap, for the sampler's reference path.
  void forward_logits(const int32_t* inputs, int B, int T, float* logits);

  // Bytes held by activations and scratch for this (batch, seq) (bf16 adds its copies).
  static size_t activation_bytes(const ModelConfig& cfg, int batch, int seq,
                                 Precision precision = Precision::kFp32);

  // Called by the backward with each layer's index, the last layer first, as soon as that
  // layer's weight gradients are complete (the head's are by then too): lets data-parallel
  // training sum them across ranks while the layers below are computed. Empty: no calls.
  void set_layer_done(std::function<void(int)> f) { layer_done_ = std::move(f); }

  // The rotary tables (T, D/2), positions 0..seq_len-1.
  const float* rope_cos() const { return cos_.data(); }
  const float* rope_sin() const { return sin_.data(); }

 private:
  void forward_blocks(const int32_t* inputs, int B, int T);
  void forward_layer(int l, const ModelTensors& w, const int32_t* inputs, int B, int T);
  void backward_layer(int l, const ModelTensors& w, const ModelTensors& g, const int32_t* inputs, int B, int T,
                      bool accumulate);
  // The variants' steps (gpt_variants.cc), each a no-op where its variant is off.
  void smear_fwd(const ModelTensors& w, int B, int T);
  void smear_bwd(const ModelTensors& w, const ModelTensors& g, int B, int T, bool accumulate);
  void resid_mix_fwd(int l, const ModelTensors& w, int64_t N);
  void resid_mix_bwd(int l, const ModelTensors& w, const ModelTensors& g, int64_t N, bool accumulate);
  void value_embed_fwd(int l, const ModelTensors& w, const int32_t* inputs, int64_t N);
  void value_embed_bwd(int l, const ModelTensors& w, const ModelTensors& g, const int32_t* inputs, int64_t N,
                       bool accumulate);
  void value_embed_dln(int l, const ModelTensors& w, int64_t N);
  void backout_fwd(const ModelTensors& w, int64_t N);
  void backout_bwd(const ModelTensors& w, const ModelTensors& g, int64_t N, bool accumulate);
  // q *= s^2 after the QK-norm (the scale of q and k folded into q), and the backward's undoing.
  void qk_scale_fwd(LayerActs& a, int64_t n);
  void qk_scale_bwd(LayerActs& a, int64_t n);
  // After dx_ changed outside a norm's backward: in bf16 runs, its GEMM copy in h0_ again.
  void refresh_dx_copy(int64_t N) { ops_->convert(h0_.data(), dx_.data(), N * cfg_.d_model); }
  // Head + loss over the final normalised activations; if grad_scale != 0, also writes
  // dlnf and the head gradient: added to the old one, or (accumulate false) overwriting it.
  double head_loss(const int32_t* targets, int64_t N, float grad_scale, float* losses, bool accumulate = true);
  // The layers' and embedding's gradients, added or (accumulate false) overwriting.
  void backward_blocks(const int32_t* inputs, int B, int T, bool accumulate);

  // The operand for a parameter tensor (a pointer into params_): in bf16 runs, its copy in wbf_.
  Operand weight(const float* p) const;
  // The operand for a saved activation f and, in bf16 runs, its copy h made in the forward.
  Operand saved(const Buffer<float>& f, const Buffer<uint16_t>& h) const { return ops_->pair(f.data(), h.data()); }
  void norm_fwd(float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows) {
    ops_->norm_fwd(out, out_h, rstd, inp, rows, cfg_.d_model, float(cfg_.norm_eps));
  }
  void norm_bwd(float* dinp, uint16_t* dinp_h, const float* dout, const float* out, const uint16_t* out_h,
                const float* rstd, int64_t rows, bool accumulate) {
    ops_->norm_bwd(dinp, dinp_h, dout, out, out_h, rstd, rows, cfg_.d_model, accumulate);
  }
  MlpTensors mlp_tensors(LayerActs& a, const LayerTensors& lw, int64_t n);
  MlpScratch mlp_scratch() { return {act_.data(), dact_.data(), h1_.data(), dact_h_.data()}; }
  MlpAct mlp_act() const;

  ModelConfig cfg_;
  const KernelTable& k_;
  ExecContext ctx_;                    // before ops_, which refers to it
  std::unique_ptr<PrecisionOps> ops_;  // every difference between fp32 and bf16 runs
  int max_b_, max_t_;
  ParamArena params_, grads_;
  Buffer<float> cos_, sin_;
  // Activations.
  Buffer<float> ln0_, rstd0_;   // (N, C) normalised embedding (the residual's start), (N)
  Buffer<float> x_;             // (N, C) residual stream
  std::vector<LayerActs> acts_;
  Buffer<float> lnf_, rstdf_;   // (N, C), (N)
  // Scratch (shared between layers).
  Buffer<float> logits_;        // (chunk, V)
  Buffer<float> row_loss_;      // (N)
  Buffer<float> dx_, dln_, dlnf_;     // (N, C)
  Buffer<float> act_, dact_;          // (N, 4C), fp32 runs
  Buffer<uint16_t> dact_h_;           // (N, 4C), bf16 runs: the activation's gradient
  Buffer<float> datt_, dq_, dk_, dv_; // (N, H*D), (N, KVH*D) x2
  // Variants: x0 and its gradient (residual scalars), the smear's sigmoid (N), the residual
  // kept for the backout (then its gradient's share), the value-embedding gates' gradient.
  Buffer<float> x0_, dx0_, smear_sig_, xback_, ve_dz_;
  // bf16 only: the weights' copy (params_ layout) and four operand slots. h0_ holds lnf's copy
  // from the final norm until the head is done, then dx_'s from each norm's backward.
  Buffer<uint16_t> wbf_;
  Buffer<uint16_t> h0_, h1_, h2_, h3_;  // N*max(C,HD), N*max(F,HD+2KD), max(N*KD, chunk*V), N*KD
  // bf16, where the backend packs B operands: the head's weights packed once a head_loss for its
  // chunks' forward (W^T) and data-gradient (W) products.
  Buffer<uint16_t> head_fwd_b_, head_dgrad_b_;
  std::function<void(int)> layer_done_;
};

// Rows of logits processed at once by the fused head + loss: 1024, fewer only where the (rows, V)
// chunk would pass 32 Mi floats (128 MiB; at least kHeadChunkRows). Each chunk streams the head's
// weights through its forward and data-gradient GEMMs and sweeps its fp32 gradient once, so
// larger chunks cut that traffic: 1024 rows against 256 made the frontier preset's step (V 32768)
// 8-10 % faster and depth 8's (V 8192, against 512) 1-3 %; 2048 gained nothing more.
inline constexpr int64_t kHeadChunkRows = 256;
inline int64_t head_chunk_rows(int64_t vocab) {
  const int64_t r = (int64_t(1) << 25) / (vocab > 0 ? vocab : 1);
  return r < kHeadChunkRows ? kHeadChunkRows : (r > 1024 ? 1024 : r);
}

}  // namespace nt
