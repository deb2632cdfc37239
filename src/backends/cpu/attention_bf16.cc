// SPDX-License-Identifier: MIT
// Causal grouped-query attention with bf16 products and fp32 softmax and accumulation.
//
// Same tiling as attention_cpu.cc (blocks of kQBlock query rows, scores against the visible
// keys in an O(kQBlock T) per-thread scratch, exact softmax rows, backward recomputing P from
// the log-sum-exp), but every product is a register-tile bf16 GEMM (gemm_vnni_bf16_*): q, k,
// v, dO, P and dS are rounded to bf16 where they become GEMM operands, as ref::
// attention_*_bf16 specifies. A task owns one (batch, kv head): it packs that head's K and V
// once into the pair layouts the tile reads, serves all the query heads of its group, and in
// backward owns the dK and dV rows it accumulates (kept transposed, D x T, so that dKᵀ += Qᵀ dS
// is a plain tile product; written back once at the end). No atomics; deterministic.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"

namespace nt::cpu {

namespace {

constexpr int64_t kQBlock = 64;  // even: pairs of query rows never straddle two blocks

inline int64_t even(int64_t n) { return n + (n & 1); }

// bf16 bits of 8 floats, round to nearest even, in the low halves of 32-bit lanes (finite
// inputs: attention never sees NaN unless its inputs have one, and then the loss is NaN anyway).
inline __m256i round_bf16(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  return _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
}
inline uint32_t round_bf16_1(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u + 0x7fffu + ((u >> 16) & 1u);
}

// dst[j] = bf16(r0[j]) | bf16(r1[j]) << 16 for j < n: two rows interleaved into the pair layout
// (r1 == nullptr stands for a row of zeros: the padding of an odd count).
void pack_pairs(uint32_t* dst, const float* r0, const float* r1, int64_t n) {
  const __m256i hi_mask = _mm256_set1_epi32(int(0xffff0000u));
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i lo = _mm256_srli_epi32(round_bf16(_mm256_loadu_ps(r0 + j)), 16);
    const __m256i hi = r1 ? _mm256_and_si256(round_bf16(_mm256_loadu_ps(r1 + j)), hi_mask) : _mm256_setzero_si256();
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), _mm256_or_si256(lo, hi));
  }
  for (; j < n; ++j) dst[j] = (round_bf16_1(r0[j]) >> 16) | (r1 ? round_bf16_1(r1[j]) & 0xffff0000u : 0u);
}

// dst[0..n) = bf16(src * a), then zeros up to n_pad.
void to_bf16_scaled(uint16_t* dst, const float* src, float a, int64_t n, int64_t n_pad) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i r = _mm256_srli_epi32(round_bf16(_mm256_mul_ps(va, _mm256_loadu_ps(src + j))), 16);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), packed);
  }
  for (; j < n; ++j) dst[j] = uint16_t(round_bf16_1(src[j] * a) >> 16);
  for (; j < n_pad; ++j) dst[j] = 0;
}

// dst (cols x rows) = src (rows x cols) transposed, 32-bit elements (bf16 pairs or floats);
// 8 x 8 blocks through registers, scalar edges.
void transpose32(uint32_t* dst, int64_t ldd, const uint32_t* src, int64_t lds, int64_t rows, int64_t cols) {
  int64_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
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
    for (; j < cols; ++j)
      for (int64_t e = 0; e < 8; ++e) dst[j * ldd + i + e] = src[(i + e) * lds + j];
  }
  for (; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * ldd + i] = src[i * lds + j];
}

// The per-thread scratch: grown on demand, kept across calls (OpenMP's pool threads persist),
// so a call neither allocates nor clears memory.
struct Scratch {
  std::vector<uint32_t> kt, vt, kn, vn, pv, dsv, rows, qt, dt;
  std::vector<uint16_t> qa, da, pa, dsa;
  std::vector<float> s, dp, dkt, dvt;
};
Scratch& scratch() {
  static thread_local Scratch w;
  return w;
}
template <class V>
auto* grow(V& v, int64_t n) {
  if (v.size() < size_t(n)) v.resize(size_t(n));
  return v.data();
}

// The rows these kernels read are short (D floats) and strided (H D apart): the hardware
// prefetchers do not follow, and every row would wait on memory. Fetch kAhead rows ahead.
constexpr int64_t kAhead = 8;
inline void prefetch_row(const float* x, int64_t stride, int64_t r, int64_t rows, int64_t D) {
  if (r < rows)
    for (int64_t e = 0; e < D; e += 16) _mm_prefetch(reinterpret_cast<const char*>(x + r * stride + e), _MM_HINT_T0);
}

// Q or dO block rows as a row-major bf16 A operand (d2 elements a row, zero padding).
void rows_to_bf16(uint16_t* dst, int64_t d2, const float* x, int64_t stride, int64_t rows, int64_t D) {
  for (int64_t r = 0; r < rows; ++r) {
    prefetch_row(x, stride, r + kAhead, rows, D);
    to_bf16_scaled(dst + r * d2, x + r * stride, 1.0f, D, d2);
  }
}

// Kᵀ in pairs along the head dim: kt[dd * T + j] = (k_j[2dd], k_j[2dd+1]): the B operand of
// S = Q Kᵀ (and, from V, of dP = dO Vᵀ). rows: scratch of T * d2 / 2 words.
void pack_transposed(uint32_t* kt, const float* k, int64_t ks, int64_t T, int64_t D, uint32_t* rows) {
  const int64_t d2 = even(D);
  rows_to_bf16(reinterpret_cast<uint16_t*>(rows), d2, k, ks, T, D);
  transpose32(kt, T, rows, d2 / 2, T, d2 / 2);
}

// K (or V) in pairs along time: kn[jj * D + d] = (k_{2jj}[d], k_{2jj+1}[d]): the B operand of
// P V and dS K.
void pack_rows(uint32_t* kn, const float* k, int64_t ks, int64_t T, int64_t D) {
  for (int64_t jj = 0; jj < even(T) / 2; ++jj) {
    prefetch_row(k, ks, 2 * jj + kAhead, T, D);
    prefetch_row(k, ks, 2 * jj + 1 + kAhead, T, D);
    pack_pairs(kn + jj * D, k + 2 * jj * ks, 2 * jj + 1 < T ? k + (2 * jj + 1) * ks : nullptr, D);
  }
}

// p[0..n) = exp(a s - sub); returns the sum.
inline float exp_row(float* p, const float* s, int64_t n, float a, float sub) {
  const __m256 va = _mm256_set1_ps(a), vs = _mm256_set1_ps(sub);
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp8(_mm256_fmsub_ps(va, _mm256_loadu_ps(s + j), vs));
    _mm256_storeu_ps(p + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; j < n; ++j) sum += (p[j] = exp1(a * s[j] - sub));
  return sum;
}

inline float row_max(const float* s, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + j));
  alignas(32) float t[8];
  _mm256_store_ps(t, m);
  float mx = *std::max_element(t, t + 8);
  for (; j < n; ++j) mx = std::max(mx, s[j]);
  return mx;
}

// The uint16 view of a pair buffer (the tile reads bf16 elements).
inline const uint16_t* u16(const uint32_t* v) { return reinterpret_cast<const uint16_t*>(v); }

void fwd(GemmVnniBf16 gemm, float* out, float* lse, const float* q, const float* k, const float* v, int64_t B,
         int64_t T, int64_t H, int64_t KVH, int64_t D) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH, qs = H * D, ks = KVH * D, d2 = even(D), t2 = even(T);
  const int64_t nblocks = (T + kQBlock - 1) / kQBlock;
#pragma omp parallel
  {
    Scratch& w = scratch();
    uint32_t* kt = grow(w.kt, d2 / 2 * T);
    uint32_t* vn = grow(w.vn, t2 / 2 * D);
    uint32_t* rows_buf = grow(w.rows, d2 / 2 * T);
    uint16_t* qa = grow(w.qa, kQBlock * d2);
    uint16_t* pa = grow(w.pa, kQBlock * t2);
    float* s = grow(w.s, kQBlock * T);
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t kvh = 0; kvh < KVH; ++kvh) {
        pack_transposed(kt, k + b * T * ks + kvh * D, ks, T, D, rows_buf);
        pack_rows(vn, v + b * T * ks + kvh * D, ks, T, D);
        for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
          for (int64_t bi = 0; bi < nblocks; ++bi) {
            const int64_t i0 = bi * kQBlock, n = std::min(T, i0 + kQBlock), rows = n - i0, n2 = even(n);
            rows_to_bf16(qa, d2, q + (b * T + i0) * qs + h * D, qs, rows, D);
            gemm(s, n, qa, d2, u16(kt), 2 * T, rows, n, d2 / 2, false);  // S = Q Kᵀ
            for (int64_t r = 0; r < rows; ++r) {
              float* sr = s + r * n;
              const int64_t nv = i0 + r + 1;  // keys 0..i visible
              const float mx = row_max(sr, nv) * scale;
              const float l = exp_row(sr, sr, nv, scale, mx);
              to_bf16_scaled(pa + r * n2, sr, 1.0f / l, nv, n2);
              lse[(b * H + h) * T + i0 + r] = mx + std::log(l);
            }
            gemm(out + (b * T + i0) * qs + h * D, qs, pa, n2, u16(vn), 2 * D, rows, D, n2 / 2, false);  // P V
          }
      }
  }
}

// One pair of query rows of the backward's elementwise part, fused: from the scores S and dP
// (fp32, rows r0 = 2 rr and r0 + 1 of the block), P = exp(a S - lse) and dS = P (dP - D_i) a,
// both zero right of the diagonal, written only as bf16 operands: P and dS in pairs of rows (the
// B operands of dVᵀ and dKᵀ) and dS row-major (the A operand of dQ). two: the second row exists.
void backward_pair(uint32_t* pv, uint32_t* dsv, uint16_t* dsa0, uint16_t* dsa1, const float* s0, const float* s1,
                   const float* dp0, const float* dp1, int64_t n, int64_t nv0, float lse0, float lse1, float di0,
                   float di1, float a, bool two) {
  const __m256 va = _mm256_set1_ps(a), l0 = _mm256_set1_ps(lse0), l1 = _mm256_set1_ps(lse1);
  const __m256 vd0 = _mm256_set1_ps(di0), vd1 = _mm256_set1_ps(di1);
  const __m256i hi = _mm256_set1_epi32(int(0xffff0000u));
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lim0 = _mm256_set1_epi32(int(nv0)), lim1 = _mm256_set1_epi32(int(nv0 + 1));
  auto store8 = [](uint16_t* dst, __m256i r) {
    r = _mm256_srli_epi32(r, 16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                     _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
  };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i jv = _mm256_add_epi32(iota, _mm256_set1_epi32(int(j)));
    const __m256 m0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim0, jv));
    const __m256 p0 = _mm256_and_ps(m0, exp8(_mm256_fmsub_ps(va, _mm256_loadu_ps(s0 + j), l0)));
    const __m256 g0 = _mm256_mul_ps(_mm256_mul_ps(p0, va), _mm256_sub_ps(_mm256_loadu_ps(dp0 + j), vd0));
    const __m256i rp0 = round_bf16(p0), rg0 = round_bf16(g0);
    __m256i rp1 = _mm256_setzero_si256(), rg1 = _mm256_setzero_si256();
    if (two) {
      const __m256 m1 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim1, jv));
      const __m256 p1 = _mm256_and_ps(m1, exp8(_mm256_fmsub_ps(va, _mm256_loadu_ps(s1 + j), l1)));
      const __m256 g1 = _mm256_mul_ps(_mm256_mul_ps(p1, va), _mm256_sub_ps(_mm256_loadu_ps(dp1 + j), vd1));
      rp1 = round_bf16(p1), rg1 = round_bf16(g1);
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
    const uint32_t rp0 = round_bf16_1(p0), rg0 = round_bf16_1(g0), rp1 = round_bf16_1(p1), rg1 = round_bf16_1(g1);
    dsa0[j] = uint16_t(rg0 >> 16);
    if (two) dsa1[j] = uint16_t(rg1 >> 16);
    pv[j] = (rp0 >> 16) | (rp1 & 0xffff0000u);
    dsv[j] = (rg0 >> 16) | (rg1 & 0xffff0000u);
  }
}

void bwd(GemmVnniBf16 gemm, float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
         const float* v, const float* out, const float* lse, int64_t B, int64_t T, int64_t H, int64_t KVH, int64_t D) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH, qs = H * D, ks = KVH * D, d2 = even(D), t2 = even(T);
  const int64_t nblocks = (T + kQBlock - 1) / kQBlock;
#pragma omp parallel
  {
    Scratch& w = scratch();
    uint32_t* kt = grow(w.kt, d2 / 2 * T);
    uint32_t* vt = grow(w.vt, d2 / 2 * T);
    uint32_t* kn = grow(w.kn, t2 / 2 * D);
    uint32_t* rows_buf = grow(w.rows, std::max(d2 / 2 * T, kQBlock / 2 * D));
    uint32_t* pv = grow(w.pv, kQBlock / 2 * T);
    uint32_t* dsv = grow(w.dsv, kQBlock / 2 * T);
    uint32_t* qt = grow(w.qt, D * kQBlock / 2);
    uint32_t* dt = grow(w.dt, D * kQBlock / 2);
    uint16_t* qa = grow(w.qa, kQBlock * d2);
    uint16_t* da = grow(w.da, kQBlock * d2);
    uint16_t* dsa = grow(w.dsa, kQBlock * t2);
    float* s = grow(w.s, kQBlock * T);
    float* dp = grow(w.dp, kQBlock * T);
    float* dkt = grow(w.dkt, D * T);
    float* dvt = grow(w.dvt, D * T);
    float di[kQBlock];
#pragma omp for collapse(2) schedule(dynamic, 1)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t kvh = 0; kvh < KVH; ++kvh) {
        const float* kb = k + b * T * ks + kvh * D;
        const float* vb = v + b * T * ks + kvh * D;
        pack_transposed(kt, kb, ks, T, D, rows_buf);
        pack_transposed(vt, vb, ks, T, D, rows_buf);
        pack_rows(kn, kb, ks, T, D);
        for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
          // The last block first: it sees every key, so for the group's first head its products
          // overwrite dKᵀ and dVᵀ whole (no clearing pass), and the rest accumulate.
          for (int64_t bi = nblocks - 1; bi >= 0; --bi) {
            const bool first = h == kvh * group && bi == nblocks - 1;
            const int64_t i0 = bi * kQBlock, n = std::min(T, i0 + kQBlock), rows = n - i0, n2 = even(n);
            const int64_t rows2 = even(rows), qo = (b * T + i0) * qs + h * D;
            // Q and dO as row-major A operands (S, dP) and transposed in pairs of rows (dKᵀ, dVᵀ).
            rows_to_bf16(qa, d2, q + qo, qs, rows, D);
            rows_to_bf16(da, d2, dout + qo, qs, rows, D);
            pack_rows(rows_buf, q + qo, qs, rows, D);
            transpose32(qt, rows2 / 2, rows_buf, D, rows2 / 2, D);
            pack_rows(rows_buf, dout + qo, qs, rows, D);
            transpose32(dt, rows2 / 2, rows_buf, D, rows2 / 2, D);
            gemm(s, n, qa, d2, u16(kt), 2 * T, rows, n, d2 / 2, false);   // S = Q Kᵀ
            gemm(dp, n, da, d2, u16(vt), 2 * T, rows, n, d2 / 2, false);  // dP = dO Vᵀ
            const float* lrow = lse + (b * H + h) * T + i0;
            for (int64_t r = 0; r < rows; ++r) {  // D_i = dO_i . O_i
              prefetch_row(dout + qo, qs, r + kAhead, rows, D);
              prefetch_row(out + qo, qs, r + kAhead, rows, D);
              di[r] = dot(dout + qo + r * qs, out + qo + r * qs, D);
            }
            for (int64_t rr = 0; rr < rows2 / 2; ++rr) {
              const int64_t r0 = 2 * rr;
              const bool two = r0 + 1 < rows;
              const float di0 = di[r0], di1 = two ? di[r0 + 1] : 0.0f;
              backward_pair(pv + rr * n, dsv + rr * n, dsa + r0 * n2, dsa + (r0 + 1) * n2, s + r0 * n,
                            s + (r0 + 1) * n, dp + r0 * n, dp + (r0 + 1) * n, n, i0 + r0 + 1, lrow[r0],
                            two ? lrow[r0 + 1] : 0.0f, di0, di1, scale, two);
              if (n2 > n) dsa[r0 * n2 + n] = 0, dsa[(r0 + 1) * n2 + n] = 0;
            }
            gemm(dq + qo, qs, dsa, n2, u16(kn), 2 * D, rows, D, n2 / 2, false);           // dQ = dS K
            gemm(dkt, T, u16(qt), rows2, u16(dsv), 2 * n, D, n, rows2 / 2, !first);  // dKᵀ += Qᵀ dS
            gemm(dvt, T, u16(dt), rows2, u16(pv), 2 * n, D, n, rows2 / 2, !first);   // dVᵀ += dOᵀ P
          }
        transpose32(reinterpret_cast<uint32_t*>(dk + b * T * ks + kvh * D), ks, reinterpret_cast<const uint32_t*>(dkt),
                    T, D, T);
        transpose32(reinterpret_cast<uint32_t*>(dv + b * T * ks + kvh * D), ks, reinterpret_cast<const uint32_t*>(dvt),
                    T, D, T);
      }
  }
}

}  // namespace

void attention_fwd_bf16_avx512(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b,
                               int64_t t, int64_t h, int64_t kvh, int64_t d) {
  fwd(gemm_vnni_bf16_avx512, out, lse, q, k, v, b, t, h, kvh, d);
}
void attention_bwd_bf16_avx512(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                               const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                               int64_t kvh, int64_t d) {
  bwd(gemm_vnni_bf16_avx512, dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d);
}
void attention_fwd_bf16_avx2(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b,
                             int64_t t, int64_t h, int64_t kvh, int64_t d) {
  fwd(gemm_vnni_bf16_portable, out, lse, q, k, v, b, t, h, kvh, d);
}
void attention_bwd_bf16_avx2(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                             const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                             int64_t kvh, int64_t d) {
  bwd(gemm_vnni_bf16_portable, dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d);
}

}  // namespace nt::cpu
