// SPDX-License-Identifier: MIT
#include "eval/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"

namespace nt {

namespace {

// Draws from softmax(logits / temperature) restricted to the top_k largest; greedy at T = 0.
uint32_t pick(const float* logits, int64_t V, const SampleOptions& opt, Rng& rng) {
  if (opt.temperature <= 0) return uint32_t(std::max_element(logits, logits + V) - logits);
  std::vector<int32_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  int64_t k = opt.top_k > 0 ? std::min<int64_t>(opt.top_k, V) : V;
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  std::vector<double> p(static_cast<size_t>(k));
  const double mx = logits[idx[0]];
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += p[size_t(i)] = std::exp((logits[idx[size_t(i)]] - mx) / opt.temperature);
  double u = rng.uniform() * sum;
  for (int64_t i = 0; i < k; ++i) {
    u -= p[size_t(i)];
    if (u <= 0) return uint32_t(idx[size_t(i)]);
  }
  return uint32_t(idx[size_t(k - 1)]);
}

// One-sequence decoder with a KV cache, built from the same kernels as training, with every
// model variant (gpt.h): the smear keeps the previous token's embedding, the value embeddings
// and their gates enter v before it is cached.
class CachedDecoder {
 public:
  explicit CachedDecoder(Gpt& m) : m_(m), c_(m.config()), k_(m.kernels()), ctx_(m.exec()) {
    const int64_t L = c_.depth, T = c_.seq_len, KD = int64_t(c_.n_kv_head) * c_.head_dim, C = c_.d_model;
    kcache_.resize(size_t(L * T * KD));
    vcache_.resize(size_t(L * T * KD));
    x_.resize(size_t(C)), x0_.resize(size_t(C)), xback_.resize(size_t(C)), prev_.resize(size_t(C));
    h_.resize(size_t(C));
    q_.resize(size_t(c_.n_head * c_.head_dim));
    att_.resize(size_t(c_.n_head * c_.head_dim));
    fc_.resize(size_t(c_.mlp_in_rows()));
    act_.resize(size_t(c_.mlp_dim()));
    scores_.resize(size_t(T));
    logits_.resize(size_t(c_.vocab_size));
    rstd_.resize(size_t(std::max(c_.n_head, 1)));
  }

  // Feeds token at position pos; returns the soft-capped logits for the next token.
  const float* step(uint32_t token, int64_t pos) {
    const int64_t C = c_.d_model;
    const float eps = float(c_.norm_eps);
    ModelTensors w = m_.params().views();
    const int32_t id = int32_t(token);
    k_.embed_fwd(ctx_, x_.data(), &id, w.wte, 1, C);
    k_.rmsnorm_fwd(ctx_, x_.data(), rstd_.data(), x_.data(), 1, C, eps);
    if (c_.smear) smear(w, pos);
    x0_ = x_;
    for (int64_t l = 0; l < c_.depth; ++l) {
      if (c_.resid_scalars)
        for (int64_t j = 0; j < C; ++j)
          x_[size_t(j)] = w.resid_lambdas[l] * x_[size_t(j)] + w.x0_lambdas[l] * x0_[size_t(j)];
      attention(w, int(l), id, pos);
      mlp(w.layers[size_t(l)]);
      if (c_.backout && l == c_.backout_layer()) xback_ = x_;
    }
    if (c_.backout)
      for (int64_t j = 0; j < C; ++j) x_[size_t(j)] -= *w.backout_lambda * xback_[size_t(j)];
    k_.rmsnorm_fwd(ctx_, h_.data(), rstd_.data(), x_.data(), 1, C, eps);
    k_.matmul(ctx_, logits_.data(), h_.data(), w.lm_head, 1, c_.vocab_size, C, false, true, 0.0f);
    const float cap = float(c_.softcap);
    if (cap > 0)
      for (auto& z : logits_) z = cap * std::tanh(z / cap);
    return logits_.data();
  }

 private:
  // x_t += smear_lambda sigmoid(smear_gate . x_t[:24]) x_{t-1}, x_{t-1} the previous token's
  // normalised embedding.
  void smear(const ModelTensors& w, int64_t pos) {
    const std::vector<float> cur = x_;
    if (pos > 0) {
      float z = 0;
      for (int j = 0; j < 24; ++j) z += cur[size_t(j)] * w.smear_gate[j];
      const float gate = *w.smear_lambda / (1.0f + std::exp(-z));
      for (size_t j = 0; j < x_.size(); ++j) x_[j] += gate * prev_[j];
    }
    prev_ = cur;
  }

  void attention(const ModelTensors& w, int l, int32_t id, int64_t pos) {
    const int64_t C = c_.d_model, H = c_.n_head, KVH = c_.n_kv_head, D = c_.head_dim, KD = KVH * D, T = c_.seq_len,
                  half = D / 2;
    const float eps = float(c_.norm_eps);
    const LayerTensors& lw = w.layers[size_t(l)];
    float* kc = kcache_.data() + l * T * KD;
    float* vc = vcache_.data() + l * T * KD;
    k_.rmsnorm_fwd(ctx_, h_.data(), rstd_.data(), x_.data(), 1, C, eps);
    k_.matmul(ctx_, q_.data(), h_.data(), lw.wq, 1, H * D, C, false, true, 0.0f);
    k_.matmul(ctx_, kc + pos * KD, h_.data(), lw.wk, 1, KD, C, false, true, 0.0f);
    k_.matmul(ctx_, vc + pos * KD, h_.data(), lw.wv, 1, KD, C, false, true, 0.0f);
    if (lw.ve)
      for (int64_t g = 0; g < KVH; ++g) {
        float z = 0;
        for (int j = 0; j < 12; ++j) z += h_[size_t(j)] * lw.ve_gate[g * 12 + j];
        const float gate = 3.0f / (1.0f + std::exp(-z));
        for (int64_t e = 0; e < D; ++e) vc[pos * KD + g * D + e] += gate * lw.ve[int64_t(id) * KD + g * D + e];
      }
    const float* cs = m_.rope_cos() + pos * half;
    const float* sn = m_.rope_sin() + pos * half;
    k_.rope_norm_fwd(ctx_, q_.data(), rstd_.data(), cs, sn, 1, 1, H, D, eps);
    k_.rope_norm_fwd(ctx_, kc + pos * KD, rstd_.data(), cs, sn, 1, 1, KVH, D, eps);
    const float scale = float(c_.qk_scale * c_.qk_scale) / std::sqrt(float(D));
    const int64_t j0 = std::max<int64_t>(0, pos - c_.attention_window(l));  // the layer's window
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / KVH);
      const float* qh = q_.data() + h * D;
      float mx = -INFINITY;
      for (int64_t j = j0; j <= pos; ++j) {
        float s = 0;
        for (int64_t e = 0; e < D; ++e) s += qh[e] * kc[j * KD + g * D + e];
        scores_[size_t(j)] = s * scale;
        mx = std::max(mx, scores_[size_t(j)]);
      }
      float sum = 0;
      for (int64_t j = j0; j <= pos; ++j) sum += scores_[size_t(j)] = std::exp(scores_[size_t(j)] - mx);
      float* o = att_.data() + h * D;
      std::fill(o, o + D, 0.0f);
      for (int64_t j = j0; j <= pos; ++j) {
        const float p = scores_[size_t(j)] / sum;
        for (int64_t e = 0; e < D; ++e) o[e] += p * vc[j * KD + g * D + e];
      }
    }
    k_.matmul(ctx_, x_.data(), att_.data(), lw.wo, 1, C, H * D, false, true, 1.0f);
  }

  void mlp(const LayerTensors& lw) {
    const int64_t C = c_.d_model, F = c_.mlp_dim();
    k_.rmsnorm_fwd(ctx_, h_.data(), rstd_.data(), x_.data(), 1, C, float(c_.norm_eps));
    k_.matmul(ctx_, fc_.data(), h_.data(), lw.wfc, 1, c_.mlp_in_rows(), C, false, true, 0.0f);
    if (c_.mlp == "swiglu") k_.swiglu_fwd(ctx_, act_.data(), fc_.data(), 1, F);
    else if (c_.mlp == "gelu") k_.gelu_fwd(ctx_, act_.data(), fc_.data(), F);
    else k_.relu2_fwd(ctx_, act_.data(), fc_.data(), F);
    k_.matmul(ctx_, x_.data(), act_.data(), lw.wproj, 1, C, F, false, true, 1.0f);
  }

  Gpt& m_;
  const ModelConfig& c_;
  const KernelTable& k_;
  const ExecContext& ctx_;  // the model's: the decoder runs on the thread that drives the model
  std::vector<float> kcache_, vcache_, x_, x0_, xback_, prev_, h_, q_, att_, fc_, act_, scores_, logits_, rstd_;
};

}  // namespace

uint32_t sample_next_token(const float* logits, int64_t V, const SampleOptions& opt, Rng& rng) {
  return pick(logits, V, opt, rng);
}

std::vector<uint32_t> sample_tokens(Gpt& model, const std::vector<uint32_t>& prompt, const SampleOptions& opt) {
  const ModelConfig& c = model.config();
  if (prompt.empty()) fail("sample: the prompt must contain at least one token");
  if (int64_t(prompt.size()) >= c.seq_len)
    fail("--prompt: %zu tokens do not leave room in the model's context of %d", prompt.size(), c.seq_len);
  for (uint32_t t : prompt) NT_CHECK(t < uint32_t(c.vocab_size), "prompt token %u outside the vocabulary", t);
  Rng rng(opt.seed);
  std::vector<uint32_t> out;
  const int64_t V = c.vocab_size;
  if (opt.use_kv_cache) {
    CachedDecoder dec(model);
    const float* logits = nullptr;
    int64_t pos = 0;
    for (uint32_t t : prompt) logits = dec.step(t, pos++);
    while (int64_t(out.size()) < opt.max_tokens && pos < c.seq_len) {
      const uint32_t next = pick(logits, V, opt, rng);
      out.push_back(next);
      logits = dec.step(next, pos++);
    }
    if (int64_t(out.size()) < opt.max_tokens && pos >= c.seq_len) {
      const uint32_t next = pick(logits, V, opt, rng);
      out.push_back(next);
    }
  } else {
    std::vector<int32_t> ctx(prompt.begin(), prompt.end());
    std::vector<float> logits(size_t(c.seq_len) * size_t(V));
    while (int64_t(out.size()) < opt.max_tokens && int64_t(ctx.size()) <= c.seq_len) {
      const int T = int(ctx.size());
      model.forward_logits(ctx.data(), 1, T, logits.data());
      const uint32_t next = pick(logits.data() + size_t(T - 1) * size_t(V), V, opt, rng);
      out.push_back(next);
      ctx.push_back(int32_t(next));
    }
  }
  return out;
}

}  // namespace nt
