// SPDX-License-Identifier: MIT
// Causal grouped-query attention as blocked small GEMMs (flash-style tiling over queries).
//
// A task owns a block of kQBlock query rows of one head. Its scores against the visible keys
// (S = Q_blk K[k0:i1]^T, kQBlock x (i1 - k0); k0 = 0, or where a sliding window starts) live in
// a per-thread scratch of kQBlock x T floats:
// memory is O(kQBlock T) per thread, never T x T per head. Each softmax row is exact (the whole
// visible row is in the block), so no online rescaling is needed. The products are oneDNN
// sgemm calls made from inside the OpenMP region, where oneDNN runs them on the calling thread.
// Backward recomputes P from the saved log-sum-exp (as flash attention does) and runs five
// GEMMs per block; it parallelises over (batch, kv head) so that each thread owns the dk/dv
// rows it accumulates into (no atomics, deterministic).
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

constexpr int64_t kQBlock = 64;

inline void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// p[0..n) = exp(s[0..n) - sub); returns the sum.
inline float exp_row(float* p, const float* s, int64_t n, float sub) {
  const __m256 vs = _mm256_set1_ps(sub);
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), vs));
    _mm256_storeu_ps(p + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum(acc);
  for (; j < n; ++j) sum += (p[j] = exp1(s[j] - sub));
  return sum;
}

}  // namespace

void attention_fwd(const ExecContext& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                   int64_t B, int64_t T, int64_t H, int64_t KVH, int64_t D, int64_t W) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH;
  const int64_t qs = H * D, ks = KVH * D;
  const int64_t nblocks = (T + kQBlock - 1) / kQBlock;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("attention fwd");
    std::vector<float> s(size_t(kQBlock * T));
#pragma omp for collapse(3) schedule(dynamic, 1) nowait
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t blk = 0; blk < nblocks; ++blk) {
          // Later blocks see more keys: run them first for balance.
          const int64_t bi = nblocks - 1 - blk;
          const int64_t i0 = bi * kQBlock, i1 = std::min(T, i0 + kQBlock), rows = i1 - i0;
          // The block's keys: [k0, i1), from the first row's window start (W: kernels.h).
          const int64_t k0 = std::max<int64_t>(0, i0 - W), nk = i1 - k0;
          const float* qb = q + (b * T + i0) * qs + h * D;
          const float* kb = k + (b * T + k0) * ks + (h / group) * D;
          const float* vb = v + (b * T + k0) * ks + (h / group) * D;
          sgemm('N', 'T', rows, nk, D, scale, qb, qs, kb, ks, 0.0f, s.data(), nk);
          for (int64_t r = 0; r < rows; ++r) {
            float* sr = s.data() + r * nk;
            // keys max(0, i - W) .. i visible: [lo, n) of the block's
            const int64_t lo = std::max<int64_t>(0, i0 + r - W) - k0, n = i0 + r + 1 - k0;
            float mx = -INFINITY;
            for (int64_t j = lo; j < n; ++j) mx = std::max(mx, sr[j]);
            const float l = exp_row(sr + lo, sr + lo, n - lo, mx);
            const float inv = 1.0f / l;
            cpu::scale(sr + lo, inv, n - lo);
            std::fill(sr, sr + lo, 0.0f);
            std::fill(sr + n, sr + nk, 0.0f);
            lse[(b * H + h) * T + i0 + r] = mx + std::log(l);
          }
          sgemm('N', 'N', rows, D, nk, 1.0f, s.data(), nk, vb, ks, 0.0f, out + (b * T + i0) * qs + h * D, qs);
        }
  }
}

void attention_bwd(const ExecContext& ctx, float* dq, float* dk, float* dv, const float* dout, const float* q,
                   const float* k, const float* v, const float* out, const float* lse, int64_t B, int64_t T, int64_t H,
                   int64_t KVH, int64_t D, int64_t W) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH;
  const int64_t qs = H * D, ks = KVH * D;
  const int64_t nblocks = (T + kQBlock - 1) / kQBlock;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("attention bwd");
    std::vector<float> p(size_t(kQBlock * T)), dp(size_t(kQBlock * T));
#pragma omp for collapse(2) schedule(dynamic, 1) nowait
    for (int64_t b = 0; b < B; ++b)
      for (int64_t kvh = 0; kvh < KVH; ++kvh) {
        float* dkb = dk + b * T * ks + kvh * D;
        float* dvb = dv + b * T * ks + kvh * D;
        for (int64_t j = 0; j < T; ++j) {
          std::fill(dkb + j * ks, dkb + j * ks + D, 0.0f);
          std::fill(dvb + j * ks, dvb + j * ks + D, 0.0f);
        }
        for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
          for (int64_t bi = 0; bi < nblocks; ++bi) {
            const int64_t i0 = bi * kQBlock, i1 = std::min(T, i0 + kQBlock), rows = i1 - i0;
            const int64_t k0 = std::max<int64_t>(0, i0 - W), nk = i1 - k0;  // the block's keys, as forward
            const int64_t qo = (b * T + i0) * qs + h * D;
            const float* kb = k + (b * T + k0) * ks + kvh * D;
            const float* vb = v + (b * T + k0) * ks + kvh * D;
            // P = exp(scale Q K^T - lse), zero outside each row's window.
            sgemm('N', 'T', rows, nk, D, scale, q + qo, qs, kb, ks, 0.0f, p.data(), nk);
            for (int64_t r = 0; r < rows; ++r) {
              float* pr = p.data() + r * nk;
              const int64_t lo = std::max<int64_t>(0, i0 + r - W) - k0, n = i0 + r + 1 - k0;
              exp_row(pr + lo, pr + lo, n - lo, lse[(b * H + h) * T + i0 + r]);
              std::fill(pr, pr + lo, 0.0f);
              std::fill(pr + n, pr + nk, 0.0f);
            }
            // dP = dO V^T; dS = P (dP - rowsum(dO o O)) scale, in place in dp (P is zero outside
            // the window, so dS is too).
            sgemm('N', 'T', rows, nk, D, 1.0f, dout + qo, qs, vb, ks, 0.0f, dp.data(), nk);
            for (int64_t r = 0; r < rows; ++r) {
              const float di = dot(dout + qo + r * qs, out + qo + r * qs, D);
              const float* pr = p.data() + r * nk;
              float* dr = dp.data() + r * nk;
              for (int64_t j = 0; j < nk; ++j) dr[j] = pr[j] * (dr[j] - di) * scale;
            }
            float* dkk = dkb + k0 * ks;
            float* dvk = dvb + k0 * ks;
            sgemm('N', 'N', rows, D, nk, 1.0f, dp.data(), nk, kb, ks, 0.0f, dq + qo, qs);    // dQ = dS K
            sgemm('T', 'N', nk, D, rows, 1.0f, dp.data(), nk, q + qo, qs, 1.0f, dkk, ks);    // dK += dS^T Q
            sgemm('T', 'N', nk, D, rows, 1.0f, p.data(), nk, dout + qo, qs, 1.0f, dvk, ks);  // dV += P^T dO
          }
      }
  }
}

}  // namespace nt::cpu
