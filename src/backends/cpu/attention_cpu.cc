// SPDX-License-Identifier: MIT
// Causal grouped-query attention, one query row at a time with an exact softmax over the
// visible keys. Memory is O(T) per thread (no T x T matrix is stored); backward recomputes the
// probabilities from the saved log-sum-exp, as flash attention does.
//
// Forward parallelises over (batch, head, query block); backward over (batch, kv head) so that
// each thread owns the dk/dv rows it accumulates into (no atomics, deterministic).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"

namespace nt::cpu {

void attention_fwd(float* out, float* lse, const float* q, const float* k, const float* v, int64_t B, int64_t T,
                   int64_t H, int64_t KVH, int64_t D) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH;
  const int64_t qstride = H * D, kstride = KVH * D;
  constexpr int64_t kBlock = 16;
  const int64_t nblocks = (T + kBlock - 1) / kBlock;
#pragma omp parallel
  {
    std::vector<float> s(static_cast<size_t>(T));
#pragma omp for collapse(3) schedule(dynamic, 1)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t blk = 0; blk < nblocks; ++blk) {
          const int64_t kvh = h / group;
          const float* kb = k + b * T * kstride + kvh * D;
          const float* vb = v + b * T * kstride + kvh * D;
          for (int64_t i = blk * kBlock; i < std::min(T, (blk + 1) * kBlock); ++i) {
            const float* qi = q + (b * T + i) * qstride + h * D;
            float mx = -INFINITY;
            for (int64_t j = 0; j <= i; ++j) {
              s[j] = dot(qi, kb + j * kstride, D) * scale;
              mx = std::max(mx, s[j]);
            }
            float l = 0;
            for (int64_t j = 0; j <= i; ++j) {
              s[j] = std::exp(s[j] - mx);
              l += s[j];
            }
            float* oi = out + (b * T + i) * qstride + h * D;
            std::fill(oi, oi + D, 0.0f);
            for (int64_t j = 0; j <= i; ++j) axpy(oi, vb + j * kstride, s[j], D);
            cpu::scale(oi, 1.0f / l, D);
            lse[(b * H + h) * T + i] = mx + std::log(l);
          }
        }
  }
}

void attention_bwd(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                   const float* v, const float* out, const float* lse, int64_t B, int64_t T, int64_t H,
                   int64_t KVH, int64_t D) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH;
  const int64_t qstride = H * D, kstride = KVH * D;
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t kvh = 0; kvh < KVH; ++kvh) {
      const float* kb = k + b * T * kstride + kvh * D;
      const float* vb = v + b * T * kstride + kvh * D;
      float* dkb = dk + b * T * kstride + kvh * D;
      float* dvb = dv + b * T * kstride + kvh * D;
      for (int64_t j = 0; j < T; ++j) {
        std::fill(dkb + j * kstride, dkb + j * kstride + D, 0.0f);
        std::fill(dvb + j * kstride, dvb + j * kstride + D, 0.0f);
      }
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
        for (int64_t i = 0; i < T; ++i) {
          const int64_t qo = (b * T + i) * qstride + h * D;
          const float* qi = q + qo;
          const float* doi = dout + qo;
          float* dqi = dq + qo;
          std::fill(dqi, dqi + D, 0.0f);
          const float di = dot(doi, out + qo, D);
          const float l = lse[(b * H + h) * T + i];
          for (int64_t j = 0; j <= i; ++j) {
            const float* kj = kb + j * kstride;
            const float p = std::exp(dot(qi, kj, D) * scale - l);
            const float dp = dot(doi, vb + j * kstride, D);
            const float ds = p * (dp - di) * scale;
            axpy(dqi, kj, ds, D);
            axpy(dkb + j * kstride, qi, ds, D);
            axpy(dvb + j * kstride, doi, p, D);
          }
        }
    }
}

}  // namespace nt::cpu
