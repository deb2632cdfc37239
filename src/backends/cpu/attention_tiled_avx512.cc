// SPDX-License-Identifier: MIT
// The tiled attention (attention_tiled.h) with AVX-512: 16-lane elementwise passes (exp16 of
// simd_avx512.h, masked tails) for two policies: bf16 operands (vcvtne2ps2bf16 rounding, the
// AVX-512-BF16 tile) and fp32 operands (exact, the fp32 pair tile). Built with -mavx512*; called
// only after a CPUID check (the fp32 policy needs AVX-512 F and BW, the bf16 one BF16 too).
#include "backends/cpu/attention_tiled.h"
#include "backends/cpu/simd_avx512.h"

namespace nt::cpu {

namespace {

// The passes that do not depend on the operand type.
struct Avx512Passes {
  // Two rows of n floats (r1 == nullptr: zeros), 16 columns at a time, handed to
  // store(j, left, r0[j..], r1[j..]), which writes them as pairs in the policy's operand type.
  template <class Store>
  static void pack_pairs_with(const float* r0, const float* r1, int64_t n, Store store) {
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512 b = r1 ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
      store(j, n - j, _mm512_maskz_loadu_ps(m, r0 + j), b);
    }
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

  // attention_tiled.cc's backward_pair at 16 lanes: P and dS of two query rows, 16 keys at a
  // time, handed to store(j, lanes, p0, p1, g0, g1), which writes them in the policy's layouts.
  template <class Store>
  static void backward_pair(const float* s0, const float* s1, const float* dp0, const float* dp1, int64_t n,
                            int64_t nv0, float lse0, float lse1, float di0, float di1, float a, bool two, Store store) {
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
      }
      store(j, n - j, p0, p1, g0, g1);
    }
  }
};

// 32 bf16 from two rows (lo: r0's 16, hi: r1's 16) interleaved into 16 pairs (r0[j], r1[j]).
inline __m512i interleave_bf16(__m512 r0, __m512 r1) {
  alignas(64) static const uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(r1, r0));
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), v);
}

struct Bf16Ops : Avx512Passes {
  using Elem = uint16_t;
  using Pair = uint32_t;
  static constexpr const char* kFwdZone = "attention fwd bf16";
  static constexpr const char* kBwdZone = "attention bwd bf16";
  static constexpr GemmVnniBf16 gemm = gemm_vnni_bf16_avx512;

  static void pack_pairs(uint32_t* dst, const float* r0, const float* r1, int64_t n) {
    pack_pairs_with(r0, r1, n, [&](int64_t j, int64_t left, __m512 a, __m512 b) {
      _mm512_mask_storeu_epi32(dst + j, lanes16(left), interleave_bf16(a, b));
    });
  }

  static void to_operand(uint16_t* dst, const float* src, float a, int64_t n, int64_t n_pad) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      _mm256_mask_storeu_epi16(dst + j, m, bf16x16(_mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, src + j))));
    }
    for (int64_t j = n; j < n_pad; ++j) dst[j] = 0;
  }

  static void backward_pair(uint32_t* pv, uint32_t* dsv, uint16_t* dsa0, uint16_t* dsa1, const float* s0,
                            const float* s1, const float* dp0, const float* dp1, int64_t n, int64_t nv0, float lse0,
                            float lse1, float di0, float di1, float a, bool two) {
    Avx512Passes::backward_pair(s0, s1, dp0, dp1, n, nv0, lse0, lse1, di0, di1, a, two,
                                 [&](int64_t j, int64_t left, __m512 p0, __m512 p1, __m512 g0, __m512 g1) {
                                   const __mmask16 m = lanes16(left);
                                   if (two) _mm256_mask_storeu_epi16(dsa1 + j, m, bf16x16(g1));
                                   _mm256_mask_storeu_epi16(dsa0 + j, m, bf16x16(g0));
                                   _mm512_mask_storeu_epi32(pv + j, m, interleave_bf16(p0, p1));
                                   _mm512_mask_storeu_epi32(dsv + j, m, interleave_bf16(g0, g1));
                                 });
  }
};

// The same passes with the products on AMX tiles (where the CPU has them).
struct AmxBf16Ops : Bf16Ops {
  static constexpr const char* kFwdZone = "attention fwd amx";
  static constexpr const char* kBwdZone = "attention bwd amx";
  static constexpr GemmVnniBf16 gemm = gemm_vnni_bf16_amx;
};

// Two rows of 16 floats interleaved into 16 pairs (r0[j], r1[j]), 32 floats: lo holds pairs
// 0-7, hi pairs 8-15.
inline void interleave_f32(__m512 r0, __m512 r1, __m512& lo, __m512& hi) {
  const __m512i kLo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i kHi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  lo = _mm512_permutex2var_ps(r0, kLo, r1);
  hi = _mm512_permutex2var_ps(r0, kHi, r1);
}

// Stores the pairs of the first `left` columns (up to 16) of interleave_f32's output.
inline void store_pairs_f32(uint64_t* dst, int64_t left, __m512 r0, __m512 r1) {
  __m512 lo, hi;
  interleave_f32(r0, r1, lo, hi);
  float* d = reinterpret_cast<float*>(dst);
  _mm512_mask_storeu_ps(d, lanes16(2 * left), lo);
  _mm512_mask_storeu_ps(d + 16, lanes16(2 * (left - 8)), hi);
}

struct F32Ops : Avx512Passes {
  using Elem = float;
  using Pair = uint64_t;
  static constexpr const char* kFwdZone = "attention fwd";
  static constexpr const char* kBwdZone = "attention bwd";
  static constexpr auto gemm = gemm_pairs_f32_avx512;

  static void pack_pairs(uint64_t* dst, const float* r0, const float* r1, int64_t n) {
    pack_pairs_with(r0, r1, n, [&](int64_t j, int64_t left, __m512 a, __m512 b) { store_pairs_f32(dst + j, left, a, b); });
  }

  static void to_operand(float* dst, const float* src, float a, int64_t n, int64_t n_pad) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      _mm512_mask_storeu_ps(dst + j, m, _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, src + j)));
    }
    for (int64_t j = n; j < n_pad; ++j) dst[j] = 0;
  }

  static void backward_pair(uint64_t* pv, uint64_t* dsv, float* dsa0, float* dsa1, const float* s0, const float* s1,
                            const float* dp0, const float* dp1, int64_t n, int64_t nv0, float lse0, float lse1,
                            float di0, float di1, float a, bool two) {
    Avx512Passes::backward_pair(s0, s1, dp0, dp1, n, nv0, lse0, lse1, di0, di1, a, two,
                                 [&](int64_t j, int64_t left, __m512 p0, __m512 p1, __m512 g0, __m512 g1) {
                                   const __mmask16 m = lanes16(left);
                                   if (two) _mm512_mask_storeu_ps(dsa1 + j, m, g1);
                                   _mm512_mask_storeu_ps(dsa0 + j, m, g0);
                                   store_pairs_f32(pv + j, left, p0, p1);
                                   store_pairs_f32(dsv + j, left, g0, g1);
                                 });
  }
};

}  // namespace

void attention_fwd_bf16_avx512(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b,
                               int64_t t, int64_t h, int64_t kvh, int64_t d) {
  attention_tiled::fwd<Bf16Ops>(out, lse, q, k, v, b, t, h, kvh, d);
}
void attention_bwd_bf16_avx512(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                               const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                               int64_t kvh, int64_t d) {
  attention_tiled::bwd<Bf16Ops>(dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d);
}
void attention_fwd_bf16_amx(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b,
                            int64_t t, int64_t h, int64_t kvh, int64_t d) {
  attention_tiled::fwd<AmxBf16Ops>(out, lse, q, k, v, b, t, h, kvh, d);
}
void attention_bwd_bf16_amx(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                            const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                            int64_t kvh, int64_t d) {
  attention_tiled::bwd<AmxBf16Ops>(dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d);
}
void attention_fwd_avx512(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b, int64_t t,
                          int64_t h, int64_t kvh, int64_t d) {
  attention_tiled::fwd<F32Ops>(out, lse, q, k, v, b, t, h, kvh, d);
}
void attention_bwd_avx512(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                          const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                          int64_t kvh, int64_t d) {
  attention_tiled::bwd<F32Ops>(dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d);
}

}  // namespace nt::cpu
