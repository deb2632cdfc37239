// SPDX-License-Identifier: MIT
// Small AVX2+FMA building blocks shared by the CPU kernels (the build floor is AVX2).
// Every loop handles its tail, so any length works.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace nt::cpu {
// Internal linkage: these inline functions are compiled into translation units built with
// different -m flags, and the linker must not merge them into one copy.
namespace {

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

inline float dot(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y += a * x
inline void axpy(float* y, const float* x, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

// y *= a
inline void scale(float* y, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

inline float sum_sq(const float* x, int64_t n) { return dot(x, x, n); }

// e^x for 8 floats: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial (Cephes
// expf coefficients), 2^n through the exponent bits. Relative error ~2 ulp; inputs are clamped
// to [-87.3, 88.7] (e^-87.3 is the smallest normal float), so no NaN or overflow from large |x|.
inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// tanh of N vectors in place: tanh(x) = 1 - 2 / (e^{2x} + 1), |x| clamped to 9, where tanh is 1
// to float precision. Each step is taken across all N before the next, so that the core overlaps
// their chains of dependent operations (simd_avx512.h's tanh16_n says how much).
template <int N>
inline void tanh8_n(__m256 (&x)[N]) {
  __m256 e[N];
#pragma GCC unroll 8
  for (int q = 0; q < N; ++q) x[q] = _mm256_min_ps(_mm256_max_ps(x[q], _mm256_set1_ps(-9.0f)), _mm256_set1_ps(9.0f));
#pragma GCC unroll 8
  for (int q = 0; q < N; ++q) e[q] = exp8(_mm256_add_ps(x[q], x[q]));
#pragma GCC unroll 8
  for (int q = 0; q < N; ++q)
    x[q] = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                         _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e[q], _mm256_set1_ps(1.0f))));
}

inline __m256 tanh8(__m256 x) {
  __m256 v[1] = {x};
  tanh8_n(v);
  return v[0];
}

// Scalar versions with the same numerics, for loop tails.
inline float exp1(float x) {
  alignas(32) float v[8] = {x};
  _mm256_store_ps(v, exp8(_mm256_load_ps(v)));
  return v[0];
}
inline float tanh1(float x) {
  alignas(32) float v[8] = {x};
  _mm256_store_ps(v, tanh8(_mm256_load_ps(v)));
  return v[0];
}

// fp32 -> bf16 round to nearest even (finite inputs; NaN is not preserved), for operands written
// straight from a vectorised pass. bf16_hi8 / bf16_hi1 leave the bf16 bits in the high half of
// each 32-bit lane (the low half is garbage), which is what interleaving two rows into pairs
// wants; bf16x8 packs 8 lanes into 128 bits, bf16_1 is the scalar tail.
inline __m256i bf16_hi8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
}
inline uint32_t bf16_hi1(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u + 0x7fffu + ((u >> 16) & 1u);
}
// The bf16 bits of 8 lanes already rounded by bf16_hi8, packed into 128 bits.
inline __m128i pack_hi8(__m256i r) {
  r = _mm256_srli_epi32(r, 16);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
inline __m128i bf16x8(__m256 x) { return pack_hi8(bf16_hi8(x)); }
inline uint16_t bf16_1(float x) { return uint16_t(bf16_hi1(x) >> 16); }

// dst (cols x rows) = src (rows x cols) transposed, 32-bit elements (floats, or bf16 pairs);
// 8 x 8 blocks through registers, scalar edges. The blocks go along dst's rows, so that each of
// its lines is written whole before the next (the attention's dK and dV go straight into the
// gradient tensors, whose rows are far apart: written a half line at a time, column block by
// column block, those transposes would be slow).
inline void transpose_32bit(uint32_t* dst, int64_t ldd, const uint32_t* src, int64_t lds, int64_t rows, int64_t cols) {
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t j = 0; j < cols8; j += 8) {
    for (int64_t i = 0; i < rows8; i += 8) {
      __m256 r[8], t[8];
      for (int e = 0; e < 8; ++e) r[e] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + (i + e) * lds + j));
      for (int e = 0; e < 8; e += 2) {
        t[e] = _mm256_unpacklo_ps(r[e], r[e + 1]);
        t[e + 1] = _mm256_unpackhi_ps(r[e], r[e + 1]);
      }
      for (int e = 0; e < 8; e += 4) {
        r[e] = _mm256_shuffle_ps(t[e], t[e + 2], 0x44);
        r[e + 1] = _mm256_shuffle_ps(t[e], t[e + 2], 0xee);
        r[e + 2] = _mm256_shuffle_ps(t[e + 1], t[e + 3], 0x44);
        r[e + 3] = _mm256_shuffle_ps(t[e + 1], t[e + 3], 0xee);
      }
      for (int e = 0; e < 4; ++e) {
        t[e] = _mm256_permute2f128_ps(r[e], r[e + 4], 0x20);
        t[e + 4] = _mm256_permute2f128_ps(r[e], r[e + 4], 0x31);
      }
      for (int e = 0; e < 8; ++e) _mm256_storeu_ps(reinterpret_cast<float*>(dst + (j + e) * ldd + i), t[e]);
    }
    for (int64_t e = 0; e < 8; ++e)
      for (int64_t i = rows8; i < rows; ++i) dst[(j + e) * ldd + i] = src[i * lds + j + e];
  }
  for (int64_t j = cols8; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) dst[j * ldd + i] = src[i * lds + j];
}

// The same for 64-bit elements (fp32 pairs): 4 x 4 blocks through registers, scalar edges.
inline void transpose_64bit(uint64_t* dst, int64_t ldd, const uint64_t* src, int64_t lds, int64_t rows, int64_t cols) {
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    int64_t j = 0;
    for (; j + 4 <= cols; j += 4) {
      __m256d r[4], t[4];
      for (int e = 0; e < 4; ++e) r[e] = _mm256_loadu_pd(reinterpret_cast<const double*>(src + (i + e) * lds + j));
      t[0] = _mm256_unpacklo_pd(r[0], r[1]);
      t[1] = _mm256_unpackhi_pd(r[0], r[1]);
      t[2] = _mm256_unpacklo_pd(r[2], r[3]);
      t[3] = _mm256_unpackhi_pd(r[2], r[3]);
      _mm256_storeu_pd(reinterpret_cast<double*>(dst + j * ldd + i), _mm256_permute2f128_pd(t[0], t[2], 0x20));
      _mm256_storeu_pd(reinterpret_cast<double*>(dst + (j + 1) * ldd + i), _mm256_permute2f128_pd(t[1], t[3], 0x20));
      _mm256_storeu_pd(reinterpret_cast<double*>(dst + (j + 2) * ldd + i), _mm256_permute2f128_pd(t[0], t[2], 0x31));
      _mm256_storeu_pd(reinterpret_cast<double*>(dst + (j + 3) * ldd + i), _mm256_permute2f128_pd(t[1], t[3], 0x31));
    }
    for (; j < cols; ++j)
      for (int64_t e = 0; e < 4; ++e) dst[j * ldd + i + e] = src[(i + e) * lds + j];
  }
  for (; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
}

}  // namespace
}  // namespace nt::cpu
