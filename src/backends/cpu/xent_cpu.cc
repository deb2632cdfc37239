// SPDX-License-Identifier: MIT
// Soft-capped cross-entropy over rows of logits, fused with its gradient (written in place).
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_ops.h"

namespace nt::cpu {

void softcap_xent(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t V, float cap,
                  float grad_scale) {
  const float inv_cap = 1.0f / cap;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float* l = logits + r * V;
    if (targets[r] < 0) {
      losses[r] = 0;
      if (grad_scale != 0.0f) std::fill(l, l + V, 0.0f);
      continue;
    }
    // z = cap tanh(l / cap), kept in l; |z| <= cap so exp(z - cap) never overflows and the
    // max pass is unnecessary.
    for (int64_t i = 0; i < V; ++i) l[i] = cap * std::tanh(l[i] * inv_cap);
    double sum = 0;
    for (int64_t i = 0; i < V; ++i) sum += std::exp(l[i] - cap);
    const float lse = cap + float(std::log(sum));
    const int64_t t = targets[r];
    losses[r] = lse - l[t];
    if (grad_scale != 0.0f) {
      for (int64_t i = 0; i < V; ++i) {
        const float z = l[i];
        const float p = std::exp(z - lse) - (i == t ? 1.0f : 0.0f);
        const float u = z * inv_cap;
        l[i] = grad_scale * p * (1.0f - u * u);
      }
    }
  }
}

}  // namespace nt::cpu
