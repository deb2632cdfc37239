// SPDX-License-Identifier: MIT
// The portable register-tile bf16 GEMM (AVX2 floor; contract in gemm.h): the operands are
// widened to fp32, whose products of bf16 values are exact, so it computes what the
// AVX-512-BF16 tile computes up to the order of the fp32 additions.
#include <cstring>

#include "backends/cpu/gemm/gemm.h"

namespace nt::cpu {

namespace {
inline float widen(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
}  // namespace

void gemm_vnni_bf16_portable(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                             int64_t m, int64_t n, int64_t k2, bool accumulate) {
  constexpr int64_t kCols = 64;
  float acc[kCols];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j0 = 0; j0 < n; j0 += kCols) {
      const int64_t nc = n - j0 < kCols ? n - j0 : kCols;
      for (int64_t j = 0; j < nc; ++j) acc[j] = 0.0f;
      for (int64_t kk = 0; kk < k2; ++kk) {
        const float a0 = widen(a[i * lda + 2 * kk]), a1 = widen(a[i * lda + 2 * kk + 1]);
        const uint16_t* b = bp + kk * ldb + 2 * j0;
        for (int64_t j = 0; j < nc; ++j) acc[j] += a0 * widen(b[2 * j]) + a1 * widen(b[2 * j + 1]);
      }
      float* cr = c + i * ldc + j0;
      for (int64_t j = 0; j < nc; ++j) cr[j] = accumulate ? cr[j] + acc[j] : acc[j];
    }
}

}  // namespace nt::cpu
