// SPDX-License-Identifier: MIT
#include "kernels/newton_schulz_bf16.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace nt {

void NewtonSchulzBf16::run(const KernelTable& k, float* x, float* y, float* a, float* b, int64_t m, int64_t n,
                           int steps) {
  NT_CHECK(m <= n, "newton_schulz wants rows <= cols (%ld, %ld)", long(m), long(n));
  NT_CHECK(k.to_bf16 && k.matmul_bf16, "backend %s has no bf16 GEMM", k.name);
  if (xh_.size() < size_t(m * n)) xh_.resize(size_t(m * n));
  if (ah_.size() < size_t(m * m)) ah_.resize(size_t(m * m)), bh_.resize(size_t(m * m));
  const float ca = 3.4445f, cb = -4.7750f, cc = 2.0315f;  // the coefficients of optim's newton_schulz
  const float norm = float(std::sqrt(k.sum_squares(x, m * n)));
  k.axpby(x, x, m * n, 0.0f, 1.0f / (norm + 1e-7f));
  for (int it = 0; it < steps; ++it) {
    k.to_bf16(xh_.data(), x, m * n);
    k.matmul_bf16(a, xh_.data(), xh_.data(), m, m, n, false, true, 0.0f);  // A = X X^T
    k.to_bf16(ah_.data(), a, m * m);
    k.matmul_bf16(b, ah_.data(), ah_.data(), m, m, m, false, false, 0.0f);  // B = A A
    k.axpby(b, a, m * m, cb, cc);                                           // B = b A + c A A
    k.to_bf16(bh_.data(), b, m * m);
    k.matmul_bf16(y, bh_.data(), xh_.data(), m, n, m, false, false, 0.0f);  // Y = B X
    k.axpby(y, x, m * n, ca, 1.0f);                                         // Y = a X + B X
    std::memcpy(x, y, size_t(m * n) * sizeof(float));
  }
}

}  // namespace nt
