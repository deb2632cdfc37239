// SPDX-License-Identifier: MIT
// The tiled attention (attention_tiled.h) with AVX-512: 16-lane elementwise passes (exp16 of
// simd_avx512.h, masked tails) for two policies: bf16 operands (vcvtne2ps2bf16 rounding, the
// AVX-512-BF16 tile) and fp32 operands (exact, the fp32 pair tile). Built with -mavx512*; called
// only after a CPUID check (the fp32 policy needs AVX-512 F and BW, the bf16 one BF16 too).
#include "backends/cpu/attention_tiled.h"
#include "backends/cpu/simd_avx512.h"

namespace nt::cpu {

namespace {

// The 16-lane passes of attention_tiled.h, written once for both operand types. Store (the
// policy) says how 16 floats become operand elements, store_elems(dst, mask, v), how two rows'
// 16 floats become 16 pairs, store_pairs(dst, left, r0, r1) (left: columns still to go, up to
// 16 of them written), and which exp the softmax takes. Everything else is fp32 and the same.
template <class Store>
struct Avx512Passes {
  // Two rows of n floats (r1 == nullptr: zeros) as pairs.
  template <class P>
  static void pack_pairs(P* dst, const float* r0, const float* r1, int64_t n) {
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512 b = r1 ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
      Store::store_pairs(dst + j, n - j, _mm512_maskz_loadu_ps(m, r0 + j), b);
    }
  }

  // dst = src as operand elements for n elements, zeros up to n_pad.
  template <class E>
  static void to_operand(E* dst, const float* src, int64_t n, int64_t n_pad) {
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      Store::store_elems(dst + j, m, _mm512_maskz_loadu_ps(m, src + j));
    }
    for (int64_t j = n; j < n_pad; ++j) dst[j] = 0;
  }

  // Whether every row of dst (row stride ldd floats) starts on a 64-byte line: then the blocks
  // below go out with streaming stores.
  static bool aligned_rows(const float* dst, int64_t ldd) {
    return (reinterpret_cast<uintptr_t>(dst) & 63) == 0 && ldd % 16 == 0;
  }

  // dst (rows x cols, row stride ldd) = src (rows x cols, contiguous): a block of O or dQ out of
  // the tile products' scratch, with streaming stores where dst's rows are aligned whole lines
  // (the products straight into O or dQ read each of their lines for ownership first).
  static void write_rows(float* dst, int64_t ldd, const float* src, int64_t rows, int64_t cols) {
    const bool lines = aligned_rows(dst, ldd) && cols % 16 == 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; j += 16) {
        const __mmask16 m = lanes16(cols - j);
        const __m512 v = _mm512_maskz_loadu_ps(m, src + r * cols + j);
        if (lines) _mm512_stream_ps(dst + r * ldd + j, v);
        else _mm512_mask_storeu_ps(dst + r * ldd + j, m, v);
      }
    if (lines) _mm_sfence();  // seen before the region's closing barrier
  }

  // dst (cols x rows, row stride ldd) = src (rows x cols) transposed, in 16 x 16 blocks: dK and
  // dV out of their transposed accumulators into the gradient tensors. Where dst's rows are
  // aligned, each gets whole 64-byte lines with streaming stores: the 8 x 8 blocks' half lines
  // would read every line for ownership first, rows 2 KiB or more apart (whole lines stored
  // through the cache gain nothing).
  static void write_transposed(float* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows, int64_t cols) {
    const bool lines = aligned_rows(dst, ldd);
    const int64_t rows16 = rows / 16 * 16, cols16 = cols / 16 * 16;
    for (int64_t j = 0; j < cols16; j += 16) {
      for (int64_t i = 0; i < rows16; i += 16) {
        __m512i r[16];
        for (int e = 0; e < 16; ++e) r[e] = _mm512_loadu_si512(src + (i + e) * lds + j);
        transpose16(r);
        for (int e = 0; e < 16; ++e) {
          float* d = dst + (j + e) * ldd + i;
          if (lines) _mm512_stream_si512(reinterpret_cast<__m512i*>(d), r[e]);
          else _mm512_storeu_si512(d, r[e]);
        }
      }
      for (int64_t e = 0; e < 16; ++e)
        for (int64_t i = rows16; i < rows; ++i) dst[(j + e) * ldd + i] = src[i * lds + j + e];
    }
    for (int64_t j = cols16; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) dst[j * ldd + i] = src[i * lds + j];
    if (lines) _mm_sfence();  // seen before the region's closing barrier
  }

  static float row_max(const float* s, int64_t n) {
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    __m512 mx = lowest;
    for (int64_t j = 0; j < n; j += 16) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(lowest, lanes16(n - j), s + j));
    return _mm512_reduce_max_ps(mx);
  }

  // dst[0..n) = exp(a s - sub) as operand elements, zeros up to n_pad; returns the sum of the
  // exps (before any rounding).
  template <class E>
  static float exp_operand(E* dst, const float* s, int64_t n, int64_t n_pad, float a, float sub) {
    const __m512 va = _mm512_set1_ps(a), vs = _mm512_set1_ps(sub);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512 e = _mm512_maskz_mov_ps(m, Store::exp(_mm512_fmsub_ps(va, _mm512_maskz_loadu_ps(m, s + j), vs)));
      Store::store_elems(dst + j, m, e);
      acc = _mm512_add_ps(acc, e);
    }
    for (int64_t j = n; j < n_pad; ++j) dst[j] = 0;
    return _mm512_reduce_add_ps(acc);
  }

  // attention_tiled.cc's backward_pair at 16 lanes: P and dS of two query rows, 16 keys at a
  // time: dS rows as elements (dsa0, dsa1), P and dS as pairs of the two rows (pv, dsv).
  template <class P, class E>
  static void backward_pair(P* pv, P* dsv, E* dsa0, E* dsa1, const float* s0, const float* s1, const float* dp0,
                            const float* dp1, int64_t n, int64_t nv0, float lse0, float lse1, float di0, float di1,
                            float a, bool two) {
    const __m512 va = _mm512_set1_ps(a), l0 = _mm512_set1_ps(lse0), l1 = _mm512_set1_ps(lse1);
    const __m512 vd0 = _mm512_set1_ps(di0), vd1 = _mm512_set1_ps(di1);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i lim0 = _mm512_set1_epi32(int(nv0)), lim1 = _mm512_set1_epi32(int(nv0 + 1));
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = lanes16(n - j);
      const __m512i jv = _mm512_add_epi32(iota, _mm512_set1_epi32(int(j)));
      const __m512 p0 = _mm512_maskz_mov_ps(_mm512_cmplt_epi32_mask(jv, lim0),
                                            Store::exp(_mm512_fmsub_ps(va, _mm512_maskz_loadu_ps(m, s0 + j), l0)));
      const __m512 g0 = _mm512_mul_ps(_mm512_mul_ps(p0, va), _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dp0 + j), vd0));
      __m512 p1 = _mm512_setzero_ps(), g1 = _mm512_setzero_ps();
      if (two) {
        p1 = _mm512_maskz_mov_ps(_mm512_cmplt_epi32_mask(jv, lim1),
                                 Store::exp(_mm512_fmsub_ps(va, _mm512_maskz_loadu_ps(m, s1 + j), l1)));
        g1 = _mm512_mul_ps(_mm512_mul_ps(p1, va), _mm512_sub_ps(_mm512_maskz_loadu_ps(m, dp1 + j), vd1));
        Store::store_elems(dsa1 + j, m, g1);
      }
      Store::store_elems(dsa0 + j, m, g0);
      Store::store_pairs(pv + j, n - j, p0, p1);
      Store::store_pairs(dsv + j, n - j, g0, g1);
    }
  }
};

// bf16 operands (vcvtne2ps2bf16 rounding) for the AVX-512-BF16 tile.
struct Bf16Ops : Avx512Passes<Bf16Ops> {
  using Elem = uint16_t;
  using Pair = uint32_t;
  static constexpr const char* kFwdZone = "attention fwd bf16";
  static constexpr const char* kBwdZone = "attention bwd bf16";
  static constexpr GemmVnniBf16 gemm = gemm_vnni_bf16_avx512;

  static void store_elems(uint16_t* dst, __mmask16 m, __m512 v) { _mm256_mask_storeu_epi16(dst, m, bf16x16(v)); }
  // The probabilities become bf16 operands: exp to 6e-5 is enough (the log-sum-exp and the
  // backward's recomputed P use the same one, so they stay consistent).
  static __m512 exp(__m512 x) { return exp16_bf16(x); }
  static void store_pairs(uint32_t* dst, int64_t left, __m512 r0, __m512 r1) {
    _mm512_mask_storeu_epi32(dst, lanes16(left), interleave_bf16(r0, r1));
  }
};

// The same passes with the products on AMX tiles (where the CPU has them).
struct AmxBf16Ops : Bf16Ops {
  static constexpr const char* kFwdZone = "attention fwd amx";
  static constexpr const char* kBwdZone = "attention bwd amx";
  static constexpr GemmVnniBf16 gemm = gemm_vnni_bf16_amx;
};

// fp32 operands (exact) for the fp32 pair tile.
struct F32Ops : Avx512Passes<F32Ops> {
  using Elem = float;
  using Pair = uint64_t;
  static constexpr const char* kFwdZone = "attention fwd";
  static constexpr const char* kBwdZone = "attention bwd";
  static constexpr auto gemm = gemm_pairs_f32_avx512;

  static void store_elems(float* dst, __mmask16 m, __m512 v) { _mm512_mask_storeu_ps(dst, m, v); }
  static __m512 exp(__m512 x) { return exp16(x); }
  // The pairs of the first `left` columns (up to 16): two 16-float halves.
  static void store_pairs(uint64_t* dst, int64_t left, __m512 r0, __m512 r1) {
    __m512 lo, hi;
    interleave_f32(r0, r1, lo, hi);
    float* d = reinterpret_cast<float*>(dst);
    _mm512_mask_storeu_ps(d, lanes16(2 * left), lo);
    _mm512_mask_storeu_ps(d + 16, lanes16(2 * (left - 8)), hi);
  }
};

}  // namespace

const AttentionKernels attention_tiled_bf16_avx512 = {attention_tiled::fwd<Bf16Ops>, attention_tiled::bwd<Bf16Ops>};
const AttentionKernels attention_tiled_bf16_amx = {attention_tiled::fwd<AmxBf16Ops>, attention_tiled::bwd<AmxBf16Ops>};
const AttentionKernels attention_tiled_f32_avx512 = {attention_tiled::fwd<F32Ops>, attention_tiled::bwd<F32Ops>};

}  // namespace nt::cpu
