// SPDX-License-Identifier: MIT
// The model variants' own steps, forward and backward (docs/FORMATS.md names their tensors):
//   smear:          x_t += smear_lambda sigmoid(smear_gate . x_t[:24]) x_{t-1}, after the embedding
//   residual mix:   x = resid_lambdas[l] x + x0_lambdas[l] x0 before block l (x0: x after smear)
//   value embeds:   v += 3 sigmoid(ve_gate ln1[:12]) ve[idx], one gate per kv head
//   backout:        x -= backout_lambda x_mid before the final norm (x_mid: after block L/2)
//   qk scale:       q, k *= s after the QK-norm, folded into q as s^2 (the scores are the same)
// Their per-row work is O(N C) against the blocks' O(N C^2) GEMMs: plain loops.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "model/gpt.h"
#include "profile/profile.h"

namespace nt {

namespace {

double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}
float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }
// A scalar parameter's gradient: added, or (a step's first micro-batch) overwriting.
void put(float* g, double v, bool accumulate) { *g = accumulate ? float(*g + v) : float(v); }

constexpr int kSmearChannels = 24, kVeGateChannels = 12;

// ln1's element i: fp32 runs keep ln1, bf16 runs only its bf16 GEMM operand (widened exactly).
float ln1_at(const LayerActs& a, size_t i) {
  if (a.ln1.size() > 0) return a.ln1[i];
  const uint32_t u = uint32_t(a.ln1_h[i]) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
// The value-embedding gate's pre-activation of row r, head h.
double gate_input(const LayerActs& a, int64_t r, int64_t C, const float* w) {
  double s = 0;
  for (int j = 0; j < kVeGateChannels; ++j) s += double(ln1_at(a, size_t(r * C + j))) * double(w[j]);
  return s;
}

}  // namespace

void Gpt::qk_scale_fwd(LayerActs& a, int64_t n) {
  if (cfg_.qk_scale == 1.0) return;
  const float s2 = float(cfg_.qk_scale * cfg_.qk_scale);
  k_.axpby(ctx_, a.q.data(), a.q.data(), n, 0.0f, s2);
}

// The attention's dq is over s^2 q: the QK-norm's output gradient is s^2 dq, and its saved
// output q itself again.
void Gpt::qk_scale_bwd(LayerActs& a, int64_t n) {
  if (cfg_.qk_scale == 1.0) return;
  const double s2 = cfg_.qk_scale * cfg_.qk_scale;
  k_.axpby(ctx_, dq_.data(), dq_.data(), n, 0.0f, float(s2));
  k_.axpby(ctx_, a.q.data(), a.q.data(), n, 0.0f, float(1.0 / s2));
}

void Gpt::smear_fwd(const ModelTensors& w, int B, int T) {
  if (!cfg_.smear) return;
  const int64_t C = cfg_.d_model;
  const float lambda = *w.smear_lambda;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 1; t < T; ++t) {
      const int64_t r = b * T + t;
      const float* cur = ln0_.data() + r * C;
      const float sg = sigmoid(float(dot(cur, w.smear_gate, kSmearChannels)));
      smear_sig_[size_t(r)] = sg;
      const float gate = lambda * sg;
      float* x = x_.data() + r * C;
      for (int64_t j = 0; j < C; ++j) x[j] += gate * cur[j - C];
    }
}

// dx_ holds the gradient of the smeared x and becomes that of ln0 (rows in increasing order:
// row t's own value is read before row t + 1 adds into it).
void Gpt::smear_bwd(const ModelTensors& w, const ModelTensors& g, int B, int T, bool accumulate) {
  if (!cfg_.smear) return;
  const int64_t C = cfg_.d_model;
  const float lambda = *w.smear_lambda;
  double dlambda = 0;
  std::vector<double> dgate_w(kSmearChannels, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 1; t < T; ++t) {
      const int64_t r = b * T + t;
      const float* cur = ln0_.data() + r * C;
      float* d = dx_.data() + r * C;
      const float sg = smear_sig_[size_t(r)], gate = lambda * sg;
      const double dgate = dot(d, cur - C, C);
      for (int64_t j = 0; j < C; ++j) d[j - C] += gate * d[j];
      dlambda += dgate * sg;
      const float dz = float(dgate * lambda * sg * (1.0f - sg));
      for (int j = 0; j < kSmearChannels; ++j) {
        dgate_w[size_t(j)] += double(dz) * cur[j];
        d[j] += dz * w.smear_gate[j];
      }
    }
  put(g.smear_lambda, dlambda, accumulate);
  for (int j = 0; j < kSmearChannels; ++j) put(g.smear_gate + j, dgate_w[size_t(j)], accumulate);
}

void Gpt::resid_mix_fwd(int l, const ModelTensors& w, int64_t N) {
  if (!cfg_.resid_scalars) return;
  const int64_t n = N * cfg_.d_model;
  LayerActs& a = acts_[size_t(l)];
  std::copy_n(x_.data(), n, a.xres.data());
  k_.axpby(ctx_, x_.data(), x0_.data(), n, w.x0_lambdas[l], w.resid_lambdas[l]);
}

// dx_: the gradient of the mixed x, becomes that of the residual before the mix; x0's share
// accumulates in dx0_.
void Gpt::resid_mix_bwd(int l, const ModelTensors& w, const ModelTensors& g, int64_t N, bool accumulate) {
  if (!cfg_.resid_scalars) return;
  const int64_t n = N * cfg_.d_model;
  LayerActs& a = acts_[size_t(l)];
  put(g.resid_lambdas + l, dot(dx_.data(), a.xres.data(), n), accumulate);
  put(g.x0_lambdas + l, dot(dx_.data(), x0_.data(), n), accumulate);
  k_.axpby(ctx_, dx0_.data(), dx_.data(), n, w.x0_lambdas[l], 1.0f);
  k_.axpby(ctx_, dx_.data(), dx_.data(), n, 0.0f, w.resid_lambdas[l]);
  refresh_dx_copy(N);
}

void Gpt::value_embed_fwd(int l, const ModelTensors& w, const int32_t* inputs, int64_t N) {
  if (!cfg_.has_value_embed(l)) return;
  const int64_t C = cfg_.d_model, KVH = cfg_.n_kv_head, D = cfg_.head_dim, KD = KVH * D;
  LayerActs& a = acts_[size_t(l)];
  const LayerTensors& lw = w.layers[size_t(l)];
  for (int64_t r = 0; r < N; ++r) {
    const float* ve = lw.ve + int64_t(inputs[r]) * KD;
    for (int64_t h = 0; h < KVH; ++h) {
      const float gate = 3.0f * sigmoid(float(gate_input(a, r, C, lw.ve_gate + h * kVeGateChannels)));
      a.ve_g[size_t(r * KVH + h)] = gate;
      float* v = a.v.data() + r * KD + h * D;
      for (int64_t e = 0; e < D; ++e) v[e] += gate * ve[h * D + e];
    }
  }
}

// From dv_ (the gradient of v after the addition): the table's and the gate's gradients, and the
// gate's pre-activation gradient in ve_dz_ for value_embed_dln.
void Gpt::value_embed_bwd(int l, const ModelTensors& w, const ModelTensors& g, const int32_t* inputs, int64_t N,
                          bool accumulate) {
  if (!cfg_.has_value_embed(l)) return;
  const int64_t C = cfg_.d_model, KVH = cfg_.n_kv_head, D = cfg_.head_dim, KD = KVH * D;
  LayerActs& a = acts_[size_t(l)];
  const LayerTensors& lw = w.layers[size_t(l)];
  const LayerTensors& lg = g.layers[size_t(l)];
  if (!accumulate) std::fill_n(lg.ve, int64_t(cfg_.vocab_size) * KD, 0.0f);
  std::vector<double> dgw(size_t(KVH * kVeGateChannels), 0.0);
  for (int64_t r = 0; r < N; ++r) {
    const float* ve = lw.ve + int64_t(inputs[r]) * KD;
    float* dve = lg.ve + int64_t(inputs[r]) * KD;
    for (int64_t h = 0; h < KVH; ++h) {
      const float gate = a.ve_g[size_t(r * KVH + h)];
      const float* dv = dv_.data() + r * KD + h * D;
      const double dgate = dot(dv, ve + h * D, D);
      for (int64_t e = 0; e < D; ++e) dve[h * D + e] += gate * dv[e];
      const float dz = float(dgate * gate * (1.0 - gate / 3.0));  // d(3 sigmoid(z))/dz = g (1 - g/3)
      ve_dz_[size_t(r * KVH + h)] = dz;
      for (int j = 0; j < kVeGateChannels; ++j)
        dgw[size_t(h * kVeGateChannels + j)] += double(dz) * ln1_at(a, size_t(r * C + j));
    }
  }
  for (size_t i = 0; i < dgw.size(); ++i) put(lg.ve_gate + i, dgw[i], accumulate);
}

// The gate's share of dln1 (after the q, k, v products wrote theirs).
void Gpt::value_embed_dln(int l, const ModelTensors& w, int64_t N) {
  if (!cfg_.has_value_embed(l)) return;
  const int64_t C = cfg_.d_model, KVH = cfg_.n_kv_head;
  const float* vg = w.layers[size_t(l)].ve_gate;
  for (int64_t r = 0; r < N; ++r)
    for (int64_t h = 0; h < KVH; ++h) {
      const float dz = ve_dz_[size_t(r * KVH + h)];
      for (int j = 0; j < kVeGateChannels; ++j) dln_[size_t(r * C + j)] += dz * vg[h * kVeGateChannels + j];
    }
}

void Gpt::backout_fwd(const ModelTensors& w, int64_t N) {
  if (!cfg_.backout) return;
  k_.axpby(ctx_, x_.data(), xback_.data(), N * cfg_.d_model, -*w.backout_lambda, 1.0f);
}

// dx_: the gradient of x before the subtraction (the same); xback_ becomes the gradient's share
// for the middle residual, -backout_lambda dx, added where the backward reaches it.
void Gpt::backout_bwd(const ModelTensors& w, const ModelTensors& g, int64_t N, bool accumulate) {
  if (!cfg_.backout) return;
  const int64_t n = N * cfg_.d_model;
  put(g.backout_lambda, -dot(dx_.data(), xback_.data(), n), accumulate);
  k_.axpby(ctx_, xback_.data(), dx_.data(), n, -*w.backout_lambda, 0.0f);
}

}  // namespace nt
