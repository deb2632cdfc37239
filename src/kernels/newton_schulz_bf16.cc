// SPDX-License-Identifier: MIT
#include "kernels/newton_schulz_bf16.h"

#include <cmath>
#include <utility>

#include "core/check.h"

namespace nt {

void newton_schulz_poly(const KernelTable& k, float* b, const float* a, int64_t m) {
  const float ca = 3.4445f, cb = -4.7750f, cc = 2.0315f;
  k.axpby(b, a, m * m, cb, cc);                          // b A + c A A
  for (int64_t i = 0; i < m; ++i) b[i * m + i] += ca;  // + a I
}

// The iterate X stays in bf16 between iterations, as in the reference Muon implementations:
// each iteration is three GEMMs and a few passes over the small (m, m) matrices, with no fp32
// pass over the (m, n) iterate. The polynomial's linear term is folded into the last GEMM,
//   X' = a X + (b A + c A A) X = (a I + b A + c A A) X,
// and the last iteration writes fp32 straight into x.
void NewtonSchulzBf16::run(const KernelTable& k, float* x, float* a, float* b, int64_t m, int64_t n, int steps) {
  NT_CHECK(m <= n, "newton_schulz wants rows <= cols (%ld, %ld)", long(m), long(n));
  NT_CHECK(k.to_bf16 && k.matmul_bf16 && k.matmul_bf16_out, "backend %s has no bf16 GEMM", k.name);
  if (xh_.size() < size_t(m * n)) xh_.resize(size_t(m * n)), xh2_.resize(size_t(m * n));
  if (ah_.size() < size_t(m * m)) ah_.resize(size_t(m * m)), bh_.resize(size_t(m * m));
  const float norm = float(std::sqrt(k.sum_squares(x, m * n)));
  k.axpby(x, x, m * n, 0.0f, 1.0f / (norm + 1e-7f));
  if (steps <= 0) return;
  k.to_bf16(xh_.data(), x, m * n);
  uint16_t *cur = xh_.data(), *next = xh2_.data();
  for (int it = 0; it < steps; ++it) {
    k.matmul_bf16(a, cur, cur, m, m, n, false, true, 0.0f);  // A = X X^T
    k.to_bf16(ah_.data(), a, m * m);
    k.matmul_bf16(b, ah_.data(), ah_.data(), m, m, m, false, true, 0.0f);  // A A = A A^T (A is symmetric)
    newton_schulz_poly(k, b, a, m);                                         // a I + b A + c A A
    k.to_bf16(bh_.data(), b, m * m);
    if (it + 1 < steps) {
      k.matmul_bf16_out(next, bh_.data(), cur, m, n, m, false, false);  // X' = (aI + bA + cAA) X
      std::swap(cur, next);
    } else {
      k.matmul_bf16(x, bh_.data(), cur, m, n, m, false, false, 0.0f);
    }
  }
}

}  // namespace nt
