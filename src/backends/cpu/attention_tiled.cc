// SPDX-License-Identifier: MIT
// The bf16 attention (attention_tiled.h) on the AVX2 floor: 8-lane elementwise passes and the
// portable GEMM tile, which widens bf16 to fp32 (exact products), so it computes what the
// AVX-512-BF16 build computes up to the order of fp32 additions.
#include "backends/cpu/attention_tiled.h"

namespace nt::cpu {

namespace {

// The AVX2 bf16 policy of attention_tiled.h.
struct Avx2Ops {
  using Elem = uint16_t;
  using Pair = uint32_t;
  static constexpr const char* kFwdZone = "attention fwd bf16";
  static constexpr const char* kBwdZone = "attention bwd bf16";
  static constexpr GemmVnniBf16 gemm = gemm_vnni_bf16_portable;

  // dst[j] = bf16(r0[j]) | bf16(r1[j]) << 16 for j < n: two rows interleaved into the pair layout
  // (r1 == nullptr stands for a row of zeros: the padding of an odd count).
  static void pack_pairs(uint32_t* dst, const float* r0, const float* r1, int64_t n) {
    const __m256i hi_mask = _mm256_set1_epi32(int(0xffff0000u));
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256i lo = _mm256_srli_epi32(bf16_hi8(_mm256_loadu_ps(r0 + j)), 16);
      const __m256i hi = r1 ? _mm256_and_si256(bf16_hi8(_mm256_loadu_ps(r1 + j)), hi_mask) : _mm256_setzero_si256();
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), _mm256_or_si256(lo, hi));
    }
    for (; j < n; ++j) dst[j] = (bf16_hi1(r0[j]) >> 16) | (r1 ? bf16_hi1(r1[j]) & 0xffff0000u : 0u);
  }

  // dst (rows x cols, row stride ldd) = src (rows x cols, contiguous): a block of O or dQ out.
  static void write_rows(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * ldd, src + r * cols, size_t(cols) * sizeof(float));
  }

  // dst (cols x rows, row stride ldd) = src (rows x cols) transposed: dK and dV out.
  static void write_transposed(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows, int64_t cols) {
    attention_tiled::transpose(reinterpret_cast<uint32_t*>(dst), ldd, reinterpret_cast<const uint32_t*>(src), lds,
                               rows, cols);
  }

  // dst[0..n) = bf16(src), then zeros up to n_pad.
  static void to_operand(uint16_t* dst, const float* src, int64_t n, int64_t n_pad) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), bf16x8(_mm256_loadu_ps(src + j)));
    for (; j < n; ++j) dst[j] = bf16_1(src[j]);
    for (; j < n_pad; ++j) dst[j] = 0;
  }

  // dst[0..n) = bf16(exp(a s - sub)), zeros up to n_pad; returns the sum of the exps (before
  // rounding).
  static float exp_operand(uint16_t* dst, const float* s, int64_t n, int64_t n_pad, float a, float sub) {
    const __m256 va = _mm256_set1_ps(a), vs = _mm256_set1_ps(sub);
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256 e = exp8(_mm256_fmsub_ps(va, _mm256_loadu_ps(s + j), vs));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), bf16x8(e));
      acc = _mm256_add_ps(acc, e);
    }
    float sum = hsum(acc);
    for (; j < n; ++j) {
      const float e = exp1(a * s[j] - sub);
      dst[j] = bf16_1(e);
      sum += e;
    }
    for (; j < n_pad; ++j) dst[j] = 0;
    return sum;
  }

  static float row_max(const float* s, int64_t n) {
    __m256 m = _mm256_set1_ps(-INFINITY);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + j));
    alignas(32) float t[8];
    _mm256_store_ps(t, m);
    float mx = *std::max_element(t, t + 8);
    for (; j < n; ++j) mx = std::max(mx, s[j]);
    return mx;
  }

  // One pair of query rows of the backward's elementwise part, fused: from the scores S and dP
  // (fp32, rows r0 = 2 rr and r0 + 1 of the block), P = exp(a S - lse) and dS = P (dP - D_i) a,
  // both zero right of the diagonal, written only as bf16 operands: P and dS in pairs of rows (the
  // B operands of dVᵀ and dKᵀ) and dS row-major (the A operand of dQ). two: the second row exists.
  static void backward_pair(uint32_t* pv, uint32_t* dsv, uint16_t* dsa0, uint16_t* dsa1, const float* s0, const float* s1,
                     const float* dp0, const float* dp1, int64_t n, int64_t nv0, float lse0, float lse1, float di0,
                     float di1, float a, bool two) {
    const __m256 va = _mm256_set1_ps(a), l0 = _mm256_set1_ps(lse0), l1 = _mm256_set1_ps(lse1);
    const __m256 vd0 = _mm256_set1_ps(di0), vd1 = _mm256_set1_ps(di1);
    const __m256i hi = _mm256_set1_epi32(int(0xffff0000u));
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lim0 = _mm256_set1_epi32(int(nv0)), lim1 = _mm256_set1_epi32(int(nv0 + 1));
    auto store8 = [](uint16_t* dst, __m256i r) { _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), pack_hi8(r)); };
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256i jv = _mm256_add_epi32(iota, _mm256_set1_epi32(int(j)));
      const __m256 m0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim0, jv));
      const __m256 p0 = _mm256_and_ps(m0, exp8(_mm256_fmsub_ps(va, _mm256_loadu_ps(s0 + j), l0)));
      const __m256 g0 = _mm256_mul_ps(_mm256_mul_ps(p0, va), _mm256_sub_ps(_mm256_loadu_ps(dp0 + j), vd0));
      const __m256i rp0 = bf16_hi8(p0), rg0 = bf16_hi8(g0);
      __m256i rp1 = _mm256_setzero_si256(), rg1 = _mm256_setzero_si256();
      if (two) {
        const __m256 m1 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim1, jv));
        const __m256 p1 = _mm256_and_ps(m1, exp8(_mm256_fmsub_ps(va, _mm256_loadu_ps(s1 + j), l1)));
        const __m256 g1 = _mm256_mul_ps(_mm256_mul_ps(p1, va), _mm256_sub_ps(_mm256_loadu_ps(dp1 + j), vd1));
        rp1 = bf16_hi8(p1), rg1 = bf16_hi8(g1);
        store8(dsa1 + j, rg1);
      }
      store8(dsa0 + j, rg0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pv + j),
                          _mm256_or_si256(_mm256_srli_epi32(rp0, 16), _mm256_and_si256(rp1, hi)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dsv + j),
                          _mm256_or_si256(_mm256_srli_epi32(rg0, 16), _mm256_and_si256(rg1, hi)));
    }
    for (; j < n; ++j) {
      const float p0 = j < nv0 ? exp1(a * s0[j] - lse0) : 0.0f, g0 = p0 * a * (dp0[j] - di0);
      const float p1 = two && j < nv0 + 1 ? exp1(a * s1[j] - lse1) : 0.0f, g1 = p1 * a * (dp1[j] - di1);
      const uint32_t rp0 = bf16_hi1(p0), rg0 = bf16_hi1(g0), rp1 = bf16_hi1(p1), rg1 = bf16_hi1(g1);
      dsa0[j] = uint16_t(rg0 >> 16);
      if (two) dsa1[j] = uint16_t(rg1 >> 16);
      pv[j] = (rp0 >> 16) | (rp1 & 0xffff0000u);
      dsv[j] = (rg0 >> 16) | (rg1 & 0xffff0000u);
    }
  }
};

}  // namespace

const AttentionKernels attention_tiled_bf16_avx2 = {attention_tiled::fwd<Avx2Ops>, attention_tiled::bwd<Avx2Ops>};

}  // namespace nt::cpu
