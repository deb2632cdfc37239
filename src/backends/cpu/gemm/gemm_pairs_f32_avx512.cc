// SPDX-License-Identifier: MIT
// The AVX-512 register-tile fp32 GEMM behind the fp32 attention, Newton-Schulz's symmetric
// products and our fp32 GEMMs (sgemm_panels_avx512.cc, sgemm_at_avx512.cc; contract in gemm.h).
//
// B comes in the pair layout of the bf16 tile (two k rows interleaved), so that the fp32 and
// bf16 attentions share one algorithm and one set of packing passes. A zmm of B then holds 8
// columns x 2 k values; A's pair (a[2kk], a[2kk+1]) is broadcast as one 64-bit value, and one
// FMA does 16 useful multiply-adds: each accumulator keeps the even-k and the odd-k partial sums
// of 8 columns side by side, added together once, when the tile is stored. A tile is up to 6
// rows x 32 columns: 24 accumulators, 4 B loads and 6 broadcasts per 24 FMAs. Column tails are
// masked (a masked-off B lane loads as zero), row tails use the smaller instantiations. Whole
// tiles load B and load and store C unmasked: masked loads and stores of C from memory are slow
// on Zen 5 (C += most of all), and B's masked loads cost a few per cent too.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx512.h"

namespace nt::cpu {

namespace {

// The tile's products over k2 pair-rows into acc; Whole: all 32 columns, B's loads unmasked.
template <int MR, bool Whole>
inline void product(__m512 (&acc)[MR][4], const float* a, int64_t lda, const float* bp, int64_t ldb, int64_t k2,
                    int64_t cols) {
  __mmask16 bm[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) bm[q] = lanes16(2 * (cols - 8 * q));  // B lanes: 2 per column
  for (int64_t kk = 0; kk < k2; ++kk) {
    const float* b = bp + kk * ldb;
    __m512 bv[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) bv[q] = Whole ? _mm512_loadu_ps(b + 16 * q) : _mm512_maskz_loadu_ps(bm[q], b + 16 * q);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      double pair;
      std::memcpy(&pair, a + r * lda + 2 * kk, 8);
      const __m512 av = _mm512_castpd_ps(_mm512_set1_pd(pair));
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
    }
  }
}

template <int MR>
inline void tile(float* c, int64_t ldc, const float* a, int64_t lda, const float* bp, int64_t ldb, int64_t k2,
                 int64_t cols, bool accumulate) {
  __m512 acc[MR][4];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_setzero_ps();
  if (cols >= 32) product<MR, true>(acc, a, lda, bp, ldb, k2, cols);
  else product<MR, false>(acc, a, lda, bp, ldb, k2, cols);
  // Lane 2j holds column j's even-k sum and lane 2j + 1 its odd-k sum: gather both halves of
  // 16 columns from two accumulators and add.
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __mmask16 cm[2] = {lanes16(cols), lanes16(cols - 16)};
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m512 sum = _mm512_add_ps(_mm512_permutex2var_ps(acc[r][2 * h], even, acc[r][2 * h + 1]),
                                 _mm512_permutex2var_ps(acc[r][2 * h], odd, acc[r][2 * h + 1]));
      if (accumulate) sum = _mm512_add_ps(sum, load_masked_ps(cm[h], cr + 16 * h));
      store_masked_ps(cr + 16 * h, cm[h], sum);
    }
  }
}

}  // namespace

void gemm_pairs_f32_avx512(float* c, int64_t ldc, const float* a, int64_t lda, const float* bp, int64_t ldb,
                           int64_t m, int64_t n, int64_t k2, bool accumulate) {
  for (int64_t j = 0; j < n; j += 32) {
    const int64_t cols = n - j;
    const float* b = bp + 2 * j;
    int64_t i = 0;
    for (; i + 6 <= m; i += 6) tile<6>(c + i * ldc + j, ldc, a + i * lda, lda, b, ldb, k2, cols, accumulate);
    float* ct = c + i * ldc + j;
    const float* at = a + i * lda;
    switch (m - i) {
      case 5: tile<5>(ct, ldc, at, lda, b, ldb, k2, cols, accumulate); break;
      case 4: tile<4>(ct, ldc, at, lda, b, ldb, k2, cols, accumulate); break;
      case 3: tile<3>(ct, ldc, at, lda, b, ldb, k2, cols, accumulate); break;
      case 2: tile<2>(ct, ldc, at, lda, b, ldb, k2, cols, accumulate); break;
      case 1: tile<1>(ct, ldc, at, lda, b, ldb, k2, cols, accumulate); break;
      default: break;
    }
  }
}

}  // namespace nt::cpu
