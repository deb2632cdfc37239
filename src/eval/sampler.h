// SPDX-License-Identifier: MIT
// Autoregressive sampling. The default path keeps a KV cache (each new token costs one row of
// work per layer); the reference path recomputes the whole prefix per token and exists to test
// the cache (identical tokens at temperature 0).
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "model/gpt.h"

namespace nt {

struct SampleOptions {
  int max_tokens = 64;
  double temperature = 0.8;  // 0 = greedy
  int top_k = 50;            // 0 = all
  uint64_t seed = 42;
  bool use_kv_cache = true;
};

// The next token from one position's logits (V of them): drawn from softmax(logits / temperature)
// restricted to the top_k largest, or the largest (the first of equals) at temperature 0.
uint32_t sample_next_token(const float* logits, int64_t V, const SampleOptions& opt, Rng& rng);

// Returns the generated ids (not including the prompt). Stops at the model's context length.
// model's buffers must hold (1, seq_len) when use_kv_cache is false.
std::vector<uint32_t> sample_tokens(Gpt& model, const std::vector<uint32_t>& prompt, const SampleOptions& opt);

}  // namespace nt
