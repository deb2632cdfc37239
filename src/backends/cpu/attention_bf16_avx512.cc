// SPDX-License-Identifier: MIT
// The bf16 attention (attention_bf16.h) with AVX-512: 16-lane elementwise passes (exp16 of
// simd_avx512.h, vcvtne2ps2bf16 rounding, masked tails) and the AVX-512-BF16 GEMM tile. Built
// with -mavx512*; called only after a CPUID check.
#include "backends/cpu/attention_bf16.h"
#include "backends/cpu/simd_avx512.h"

namespace nt::cpu {

namespace {

// 32 bf16 from two rows (lo: r0's 16, hi: r1's 16) interleaved into 16 pairs (r0[j], r1[j]).
inline __m512i interleave(__m512 r0, __m512 r1) {
  alignas(64) static const uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(r1, r0));
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), v);
}

struct Avx512Ops {
  static constexpr GemmVnniBf16 gemm = gemm_vnni_bf16_avx512;

  static void pack_pairs(uint32_t* dst, const float* r0, const float* r1, int64_t n) {
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512 b = r1 ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
      _mm512_mask_storeu_epi32(dst + j, m, interleave(_mm512_maskz_loadu_ps(m, r0 + j), b));
    }
  }

  static void to_bf16_scaled(uint16_t* dst, const float* src, float a, int64_t n, int64_t n_pad) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      _mm256_mask_storeu_epi16(dst + j, m, bf16x16(_mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, src + j))));
    }
    for (int64_t j = n; j < n_pad; ++j) dst[j] = 0;
  }

  static float row_max(const float* s, int64_t n) {
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    __m512 mx = lowest;
    for (int64_t j = 0; j < n; j += 16) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(lowest, lanes16(n - j), s + j));
    return _mm512_reduce_max_ps(mx);
  }

  static float exp_row(float* p, const float* s, int64_t n, float a, float sub) {
    const __m512 va = _mm512_set1_ps(a), vs = _mm512_set1_ps(sub);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512 e = _mm512_maskz_mov_ps(m, exp16(_mm512_fmsub_ps(va, _mm512_maskz_loadu_ps(m, s + j), vs)));
      _mm512_mask_storeu_ps(p + j, m, e);
      acc = _mm512_add_ps(acc, e);
    }
    return _mm512_reduce_add_ps(acc);
  }

  // attention_bf16.cc's backward_pair at 16 lanes.
  static void backward_pair(uint32_t* pv, uint32_t* dsv, uint16_t* dsa0, uint16_t* dsa1, const float* s0,
                            const float* s1, const float* dp0, const float* dp1, int64_t n, int64_t nv0, float lse0,
                            float lse1, float di0, float di1, float a, bool two) {
    const __m512 va = _mm512_set1_ps(a), l0 = _mm512_set1_ps(lse0), l1 = _mm512_set1_ps(lse1);
    const __m512 vd0 = _mm512_set1_ps(di0), vd1 = _mm512_set1_ps(di1);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i lim0 = _mm512_set1_epi32(int(nv0)), lim1 = _mm512_set1_epi32(int(nv0 + 1));
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512i jv = _mm512_add_epi32(iota, _mm512_set1_epi32(int(j)));
      const __m512 p0 = _mm512_maskz_mov_ps(_mm512_cmplt_epi32_mask(jv, lim0),
                                            exp16(_mm512_fmsub_ps(va, _mm512_maskz_loadu_ps(m, s0 + j), l0)));
      const __m512 g0 = _mm512_mul_ps(_mm512_mul_ps(p0, va), _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dp0 + j), vd0));
      __m512 p1 = _mm512_setzero_ps(), g1 = _mm512_setzero_ps();
      if (two) {
        p1 = _mm512_maskz_mov_ps(_mm512_cmplt_epi32_mask(jv, lim1),
                                 exp16(_mm512_fmsub_ps(va, _mm512_maskz_loadu_ps(m, s1 + j), l1)));
        g1 = _mm512_mul_ps(_mm512_mul_ps(p1, va), _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dp1 + j), vd1));
        _mm256_mask_storeu_epi16(dsa1 + j, m, bf16x16(g1));
      }
      _mm256_mask_storeu_epi16(dsa0 + j, m, bf16x16(g0));
      _mm512_mask_storeu_epi32(pv + j, m, interleave(p0, p1));
      _mm512_mask_storeu_epi32(dsv + j, m, interleave(g0, g1));
    }
  }
};

}  // namespace

void attention_fwd_bf16_avx512(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b,
                               int64_t t, int64_t h, int64_t kvh, int64_t d) {
  attention_bf16::fwd<Avx512Ops>(out, lse, q, k, v, b, t, h, kvh, d);
}
void attention_bwd_bf16_avx512(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                               const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                               int64_t kvh, int64_t d) {
  attention_bf16::bwd<Avx512Ops>(dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d);
}

}  // namespace nt::cpu
