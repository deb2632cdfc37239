// SPDX-License-Identifier: MIT
// AVX-512 versions of simd_avx2.h's exp and tanh (same Cephes polynomial, same clamps, so the
// two paths agree to an ulp), a 16 x 16 transpose and small helpers, for translation units built
// with -mavx512* only.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace nt::cpu {
// Internal linkage: these inline functions are compiled into translation units built with
// different -m flags, and the linker must not merge them into one copy.
namespace {

// e^x for x in [-87.3, 88.7] (exp16 clamps to it; a caller whose x is there already skips the
// clamps).
inline __m512 exp16_in_range(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  // p 2^n by vscalefps: exact, as the AVX2 version's multiply by 2^n built in the exponent
  // bits (x is clamped, so the result is a normal float), in one instruction instead of four.
  return _mm512_scalef_ps(p, n);
}

inline __m512 exp16(__m512 x) {
  return exp16_in_range(_mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f)));
}

// e^x to a relative 6e-5 (measured over [-100, 0.5]; mean 2e-6): 2^t with t = x log2(e) split
// into round(t) and f in [-1/2, 1/2], 2^f by its degree-4 Taylor polynomial, scaled by 2^round(t)
// (vscalefps; x clamped at -87.3 as in exp16). For values rounded to bf16 (8 bits: 4e-3)
// straight after, where exp16's full precision buys nothing: 8 operations against 15.
inline __m512 exp16_bf16(__m512 x) {
  const __m512 t = _mm512_mul_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(0.009618129f);  // ln(2)^4 / 24
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.05550411f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2402265f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6931472f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// tanh of N vectors in place, each step taken across all N before the next: N independent
// chains of some 20 dependent operations side by side, which the core overlaps (the
// cross-entropy's first pass, xent_avx512.cc).
template <int N>
inline void tanh16_n(__m512 (&x)[N]) {
  __m512 d[N];
#pragma GCC unroll 8
  for (int q = 0; q < N; ++q) x[q] = _mm512_min_ps(_mm512_max_ps(x[q], _mm512_set1_ps(-9.0f)), _mm512_set1_ps(9.0f));
#pragma GCC unroll 8
  for (int q = 0; q < N; ++q) d[q] = _mm512_add_ps(exp16_in_range(_mm512_add_ps(x[q], x[q])), _mm512_set1_ps(1.0f));
  // 1 / d by the 14-bit estimate and one Newton step (fp32-accurate), cheaper than a division.
#pragma GCC unroll 8
  for (int q = 0; q < N; ++q) {
    __m512 r = _mm512_rcp14_ps(d[q]);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d[q], r, _mm512_set1_ps(2.0f)));
    x[q] = _mm512_fnmadd_ps(_mm512_set1_ps(2.0f), r, _mm512_set1_ps(1.0f));
  }
}

inline __m512 tanh16(__m512 x) {
  __m512 v[1] = {x};
  tanh16_n(v);
  return v[0];
}

// r[i] = row i of a 16 x 16 matrix of 32-bit elements; afterwards r[i] = column i.
inline void transpose16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4 g + c], lane L = rows 4g..4g+3 at column 4L + c.
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i lo01 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), hi01 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i lo23 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44),
                  hi23 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    r[c] = _mm512_shuffle_i32x4(lo01, lo23, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(lo01, lo23, 0xdd);
    r[8 + c] = _mm512_shuffle_i32x4(hi01, hi23, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(hi01, hi23, 0xdd);
  }
}

// fp32 -> bf16, round to nearest even (vcvtneps2bf16; subnormals flush to zero).
inline __m256i bf16x16(__m512 x) { return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)); }
// 16 bf16 -> fp32 (exact: the bits shifted into the high half).
inline __m512 widen_bf16x16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// 32 bf16 x -> the MLP's activation bf16(relu(x)²), as relu2_fwd_bf16 rounds it: for the GEMMs
// that apply it to an operand as they pack it.
inline __m512i relu2_bf16x32(__m512i x) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512 lo = _mm512_max_ps(widen_bf16x16(_mm512_castsi512_si256(x)), zero);
  const __m512 hi = _mm512_max_ps(widen_bf16x16(_mm512_extracti64x4_epi64(x, 1)), zero);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_mul_ps(hi, hi), _mm512_mul_ps(lo, lo)));
}
// GELU (tanh form) for results rounded to bf16 straight after: the bf16 table's gelu_fwd_bf16 /
// gelu_bwd_bf16 (convert_avx512.cc), and the bf16 products' fused epilogues and packers, which
// must write those same bits. 0.5 x (1 + tanh u) is computed as x s, s = 1 / (1 + e), e = e^(-2u):
// no division (the reciprocal estimate and one Newton step) and no cancellation in 1 + tanh u
// for x < 0. Relative error about 3e-7, against bf16's 4e-3.
inline constexpr float kGeluTanhC = 0.7978845608028654f, kGeluTanhA = 0.044715f;
struct GeluParts {
  __m512 s, e;  // 1 / (1 + e) and e = e^(-2u); e s = 1 - s
};
inline GeluParts gelu_parts16(__m512 x) {
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 u = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(kGeluTanhA), x2), x, x);
  // -2u log2(e), kept within [-126, 115] so that e is a finite normal float.
  const __m512 t = _mm512_min_ps(
      _mm512_max_ps(_mm512_mul_ps(u, _mm512_set1_ps(-2.0f * kGeluTanhC * 1.44269504088896341f)), _mm512_set1_ps(-126.0f)),
      _mm512_set1_ps(115.0f));
  // 2^t = 2^n 2^f, n = round(t), 2^f by its degree-6 Taylor polynomial, ln(2)^i / i! from the
  // highest power down (f in [-1/2, 1/2]: 2e-7).
  constexpr float kTaylor[] = {1.5403530393381606e-4f, 1.3333558146428443e-3f, 9.618129107628477e-3f,
                               5.550410866482158e-2f,  2.402265069591007e-1f,  6.931471805599453e-1f, 1.0f};
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(kTaylor[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kTaylor[i]));
  const __m512 e = _mm512_scalef_ps(p, n);
  const __m512 d = _mm512_add_ps(e, _mm512_set1_ps(1.0f));
  __m512 s = _mm512_rcp14_ps(d);
  s = _mm512_mul_ps(s, _mm512_fnmadd_ps(d, s, _mm512_set1_ps(2.0f)));
  return {s, e};
}
inline __m512 gelu16(__m512 x) { return _mm512_mul_ps(x, gelu_parts16(x).s); }
// GELU's derivative, s + x s (1 - s) 2 sqrt(2/pi) (1 + 3 a x^2), with 1 - s taken as e s.
inline __m512 gelu_grad16(__m512 x) {
  const GeluParts g = gelu_parts16(x);
  const __m512 du = _mm512_mul_ps(_mm512_set1_ps(2.0f * kGeluTanhC),
                                  _mm512_fmadd_ps(_mm512_set1_ps(3.0f * kGeluTanhA), _mm512_mul_ps(x, x), _mm512_set1_ps(1.0f)));
  return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_mul_ps(x, g.s), _mm512_mul_ps(g.e, g.s)), du, g.s);
}
// 32 bf16 values through GELU, rounded back to bf16 (gelu_fwd_bf16's values).
inline __m512i gelu_bf16x32(__m512i x) {
  const __m512 lo = gelu16(widen_bf16x16(_mm512_castsi512_si256(x)));
  const __m512 hi = gelu16(widen_bf16x16(_mm512_extracti64x4_epi64(x, 1)));
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}
// Two rows of 16 floats rounded to bf16 and interleaved into 16 pairs (r0[j], r1[j]): a row of
// an AMX (or AVX-512-BF16) B operand, pairs along k.
inline __m512i interleave_bf16(__m512 r0, __m512 r1) {
  alignas(64) static const uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i v = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(r1, r0));
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIdx), v);
}

// Half h of two rows of 32 bf16 -> 16 pairs (r0[j], r1[j]) with j = 16 h + 0..15: the pairs along
// k of both tile kinds' B layouts (AMX and the AVX-512-BF16 register tile).
inline __m512i interleave_bf16_rows(__m512i r0, __m512i r1, int h) {
  const __m512i first = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38, 6,
                                         37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i idx = _mm512_add_epi16(first, _mm512_set1_epi16(short(16 * h)));
  return _mm512_permutex2var_epi16(r0, idx, r1);
}

// Two rows of 16 floats interleaved into 16 pairs (r0[j], r1[j]), 32 floats: lo holds pairs
// 0-7, hi pairs 8-15 (the fp32 pair tile's B layout).
inline void interleave_f32(__m512 r0, __m512 r1, __m512& lo, __m512& hi) {
  const __m512i kLo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i kHi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  lo = _mm512_permutex2var_ps(r0, kLo, r1);
  hi = _mm512_permutex2var_ps(r0, kHi, r1);
}

// The same two rows' 16 pairs stored at dst: 32 floats.
inline void store_f32_pairs(float* dst, __m512 r0, __m512 r1) {
  __m512 lo, hi;
  interleave_f32(r0, r1, lo, hi);
  _mm512_storeu_ps(dst, lo);
  _mm512_storeu_ps(dst + 16, hi);
}

inline __mmask16 lanes16(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}
inline __mmask32 lanes32(int64_t n) {
  return n >= 32 ? __mmask32(0xffffffffu) : n <= 0 ? __mmask32(0) : __mmask32((1u << n) - 1);
}

// Masked loads and stores, plain where the mask is whole: Zen 5 runs masked ones streaming from
// memory at a fraction of a plain one's rate. The kernels that stream (the conversions, the
// GEMMs' packing and epilogues, the cross-entropy) go through these; the branch is predictable,
// and with a constant mask it folds away. The attention's passes and the tiles' inner loops, on
// operands in L1, keep the intrinsics, where the branch would cost. Same arguments as the
// intrinsics they stand for.
inline __m512 load_masked_ps(__mmask16 m, const float* p) {
  return m == __mmask16(0xffff) ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
inline void store_masked_ps(float* p, __mmask16 m, __m512 v) {
  if (m == __mmask16(0xffff)) _mm512_storeu_ps(p, v);
  else _mm512_mask_storeu_ps(p, m, v);
}

inline __m512i load_masked_epi32(__mmask16 m, const void* p) {
  return m == __mmask16(0xffff) ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi32(m, p);
}
inline __m512i load_masked_epi16(__mmask32 m, const void* p) {  // 32 bf16
  return m == __mmask32(0xffffffffu) ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(m, p);
}
inline void store_masked_epi16(void* p, __mmask32 m, __m512i v) {
  if (m == __mmask32(0xffffffffu)) _mm512_storeu_si512(p, v);
  else _mm512_mask_storeu_epi16(p, m, v);
}
inline __m256i load_masked_epi16x16(__mmask16 m, const void* p) {  // 16 bf16
  return m == __mmask16(0xffff) ? _mm256_loadu_si256(static_cast<const __m256i*>(p)) : _mm256_maskz_loadu_epi16(m, p);
}
inline void store_masked_epi16x16(void* p, __mmask16 m, __m256i v) {
  if (m == __mmask16(0xffff)) _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  else _mm256_mask_storeu_epi16(p, m, v);
}

// Two rows of n floats as one pair-row of the fp32 pair tile's 32-column panels, panel p's 32
// pairs at dst + p panel_stride (B's rows 2 kk and 2 kk + 1 for pair-row kk). Past n, the last
// panel holds zeros to the next 16 columns and is left as it was beyond: the tile masks a
// partial panel's loads.
inline void store_f32_pair_row(float* dst, int64_t panel_stride, const float* r0, const float* r1, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = lanes16(n - j);
    store_f32_pairs(dst + (j / 32) * panel_stride + 2 * (j % 32), load_masked_ps(m, r0 + j), load_masked_ps(m, r1 + j));
  }
}

// The AVX-512-BF16 register tile's reduction, shared by gemm_vnni_bf16_avx512 (the attention's
// products), gemm_rows_avx512 (the linear layers') and gemm_at_avx512 (their weight gradients):
// c0, c1 (MR rows x 32 columns of fp32) += A B over k2 pair-rows. A: pair kk of row r at a + r
// lda + kStep kk (rows of bf16 read in place: kStep 2; a packed strip holding each pair-row's
// pairs side by side: lda 2, kStep 2 MR), one 32-bit broadcast a row; B: pair-rows of 32 pairs,
// ldb elements apart, its two 16-pair halves loaded under m0 and m1. 2 MR independent vdpbf16ps
// chains: with MR = 8 they keep both FMA pipes busy.
template <int MR, int64_t kStep = 2>
inline void bf16_tile_product(__m512 (&c0)[MR], __m512 (&c1)[MR], const uint16_t* a, int64_t lda, const uint16_t* bp,
                              int64_t ldb, int64_t k2, __mmask16 m0, __mmask16 m1) {
  for (int64_t kk = 0; kk < k2; ++kk) {
    const uint16_t* b = bp + kk * ldb;
    const __m512bh b0 = (__m512bh)_mm512_maskz_loadu_epi32(m0, b);
    const __m512bh b1 = (__m512bh)_mm512_maskz_loadu_epi32(m1, b + 32);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * lda + kStep * kk, 4);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      c0[r] = _mm512_dpbf16_ps(c0[r], av, b0);
      c1[r] = _mm512_dpbf16_ps(c1[r], av, b1);
    }
  }
}

}  // namespace
}  // namespace nt::cpu
