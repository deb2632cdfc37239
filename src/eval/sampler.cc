// SPDX-License-Identifier: MIT
#include "eval/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/rng.h"
#include "eval/core/segment_forward.h"

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

// One-sequence decoder with a KV cache, on the scorer's forward (eval/core/segment_forward.h):
// the prompt in one batch, then a row per token, each attending to the cached keys and values.
class CachedDecoder {
 public:
  CachedDecoder(Gpt& m, int64_t prompt_len)
      : m_(m),
        fwd_(m.config(), m.params().views(), m.kernels(), m.rope_cos(), m.rope_sin(), std::max<int64_t>(prompt_len, 1)),
        logits_(size_t(m.config().vocab_size)) {
    fwd_.init_cache(cache_);
  }

  // Feeds n tokens after those fed so far; returns the soft-capped logits for the next token.
  const float* feed(const int32_t* tokens, int64_t n) {
    const ModelConfig& c = m_.config();
    const float* h = fwd_.run_cached(tokens, n, cache_) + (n - 1) * c.d_model;
    m_.kernels().matmul(logits_.data(), h, m_.params().views().lm_head, 1, c.vocab_size, c.d_model, false, true, 0.0f);
    const float cap = float(c.softcap);
    for (auto& z : logits_) z = cap * std::tanh(z / cap);
    return logits_.data();
  }

 private:
  Gpt& m_;
  SegmentForward fwd_;
  KvCache cache_;
  std::vector<float> logits_;
};

}  // namespace

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
    CachedDecoder dec(model, int64_t(prompt.size()));
    const std::vector<int32_t> ids(prompt.begin(), prompt.end());
    const float* logits = dec.feed(ids.data(), int64_t(ids.size()));
    int64_t pos = int64_t(ids.size());
    while (int64_t(out.size()) < opt.max_tokens && pos < c.seq_len) {
      const uint32_t next = pick(logits, V, opt, rng);
      out.push_back(next);
      const int32_t id = int32_t(next);
      logits = dec.feed(&id, 1);
      ++pos;
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
