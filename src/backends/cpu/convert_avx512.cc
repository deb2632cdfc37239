// SPDX-License-Identifier: MIT
// fp32 -> bf16 conversions with AVX-512-BF16 (vcvtneps2bf16: round to nearest even, subnormal
// inputs flushed to zero). Built with -mavx512*; called only when cpu_features() reports
// avx512f, avx512bw and avx512bf16 (cpu_table.cc).
#include <immintrin.h>

#include "backends/cpu/cpu_ops.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {
inline __m256i cvt16(__m512 x) { return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)); }

template <bool kRelu2>
void convert(uint16_t* dst, const float* src, int64_t n) {
  constexpr int64_t kChunk = 16384;
#pragma omp parallel if (n > 2 * kChunk)
  {
    profile::WorkZone work("to bf16");
#pragma omp for schedule(static) nowait
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t c1 = c0 + kChunk < n ? c0 + kChunk : n;
      const __m512 zero = _mm512_setzero_ps();
      int64_t i = c0;
      for (; i + 16 <= c1; i += 16) {
        __m512 x = _mm512_loadu_ps(src + i);
        if constexpr (kRelu2) {
          x = _mm512_max_ps(x, zero);
          x = _mm512_mul_ps(x, x);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), cvt16(x));
      }
      if (i < c1) {
        const __mmask16 m = __mmask16((1u << (c1 - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, src + i);
        if constexpr (kRelu2) {
          x = _mm512_max_ps(x, zero);
          x = _mm512_mul_ps(x, x);
        }
        _mm256_mask_storeu_epi16(dst + i, m, cvt16(x));
      }
    }
  }
}
void relu2_bwd(uint16_t* dst, const float* dout, const float* inp, int64_t n) {
  constexpr int64_t kChunk = 16384;
#pragma omp parallel if (n > 2 * kChunk)
  {
    profile::WorkZone work("relu2 bwd bf16");
#pragma omp for schedule(static) nowait
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t c1 = c0 + kChunk < n ? c0 + kChunk : n;
      const __m512 zero = _mm512_setzero_ps(), two = _mm512_set1_ps(2.0f);
      for (int64_t i = c0; i < c1; i += 16) {
        const __mmask16 m = c1 - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (c1 - i)) - 1);
        const __m512 r = _mm512_max_ps(_mm512_maskz_loadu_ps(m, inp + i), zero);
        const __m512 g = _mm512_mul_ps(_mm512_mul_ps(two, r), _mm512_maskz_loadu_ps(m, dout + i));
        _mm256_mask_storeu_epi16(dst + i, m, cvt16(g));
      }
    }
  }
}
}  // namespace

void relu2_bwd_bf16_avx512(uint16_t* dinp, const float* dout, const float* inp, int64_t n) {
  relu2_bwd(dinp, dout, inp, n);
}

void to_bf16_avx512(uint16_t* dst, const float* src, int64_t n) { convert<false>(dst, src, n); }
void to_bf16_rows_avx512(uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols) {
#pragma omp parallel if (rows * cols > 32768)
  {
    profile::WorkZone work("to bf16 rows");
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; j += 16) {
        const __mmask16 m = cols - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (cols - j)) - 1);
        _mm256_mask_storeu_epi16(dst + r * ld_dst + j, m, cvt16(_mm512_maskz_loadu_ps(m, src + r * cols + j)));
      }
  }
}
void relu2_fwd_bf16_avx512(uint16_t* out, const float* inp, int64_t n) { convert<true>(out, inp, n); }

}  // namespace nt::cpu
