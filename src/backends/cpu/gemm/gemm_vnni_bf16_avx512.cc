// SPDX-License-Identifier: MIT
// The AVX-512-BF16 register-tile GEMM behind the bf16 attention (contract in gemm.h).
//
// A tile is up to 8 rows x 32 columns of C: 16 zmm accumulators, enough independent
// vdpbf16ps chains to keep both ports busy. Per pair-row of B: two loads of 16 packed pairs,
// then one 32-bit broadcast of A's pair per row and two vdpbf16ps. Column tails are masked,
// row tails use the smaller instantiations. Built with -mavx512bf16; called only after a
// CPUID check.
#include <immintrin.h>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx512.h"

namespace nt::cpu {

namespace {

template <int MR>
inline void tile(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                 int64_t k2, __mmask16 m0, __mmask16 m1, bool accumulate) {
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  bf16_tile_product<MR>(c0, c1, a, lda, bp, ldb, k2, m0, m1);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    if (accumulate) {
      c0[r] = _mm512_add_ps(c0[r], _mm512_maskz_loadu_ps(m0, cr));
      c1[r] = _mm512_add_ps(c1[r], _mm512_maskz_loadu_ps(m1, cr + 16));
    }
    _mm512_mask_storeu_ps(cr, m0, c0[r]);
    _mm512_mask_storeu_ps(cr + 16, m1, c1[r]);
  }
}

inline __mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1); }

}  // namespace

void gemm_vnni_bf16_avx512(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                           int64_t m, int64_t n, int64_t k2, bool accumulate) {
  for (int64_t j = 0; j < n; j += 32) {
    const __mmask16 m0 = lanes(n - j), m1 = lanes(n - j - 16);
    const uint16_t* b = bp + 2 * j;
    int64_t i = 0;
    for (; i + 8 <= m; i += 8) tile<8>(c + i * ldc + j, ldc, a + i * lda, lda, b, ldb, k2, m0, m1, accumulate);
    float* ct = c + i * ldc + j;
    const uint16_t* at = a + i * lda;
    switch (m - i) {
      case 7: tile<7>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      case 6: tile<6>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      case 5: tile<5>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      case 4: tile<4>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      case 3: tile<3>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      case 2: tile<2>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      case 1: tile<1>(ct, ldc, at, lda, b, ldb, k2, m0, m1, accumulate); break;
      default: break;
    }
  }
}

}  // namespace nt::cpu
