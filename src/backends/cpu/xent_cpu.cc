// SPDX-License-Identifier: MIT
// Soft-capped cross-entropy over rows of logits, fused with its gradient: written in place
// (fp32), or as the bf16 operand of the head's backward GEMMs (softcap_xent_bf16: the fp32
// gradient never goes through memory). The V-wide passes use the vectorised exp/tanh of
// simd_avx2.h: with a BPE vocabulary these transcendental passes, not the head GEMM, would
// otherwise dominate the step. xent_avx512.cc is the same at 16 lanes.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

// Pass 1 of a row where cap <= kXentShiftByCapMax, kBlock vectors at a time: z = cap tanh(l /
// cap) into l, exp(z - cap) summed into acc, each step across the block's vectors (tanh8_n: the
// chains overlap, as in xent_avx512.cc). avail: the logits from l on (the next rows' lines are
// fetched too). Returns the elements done.
constexpr int kBlock = 8;
int64_t small_cap_pass1(float* l, int64_t V, int64_t avail, __m256 vinv, __m256 vcap, __m256& acc) {
  __m256 sum[kBlock];
#pragma GCC unroll 8
  for (int q = 0; q < kBlock; ++q) sum[q] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 * kBlock <= V; i += 8 * kBlock) {
    // Each line of logits fetched kXentPrefetchFloats ahead (cpu_ops.h says why).
    if (i + 8 * kBlock + kXentPrefetchFloats <= avail)
      for (int q = 0; q < kBlock; q += 2)
        _mm_prefetch(reinterpret_cast<const char*>(l + i + 8 * q + kXentPrefetchFloats), _MM_HINT_T0);
    __m256 z[kBlock];
#pragma GCC unroll 8
    for (int q = 0; q < kBlock; ++q) z[q] = _mm256_mul_ps(_mm256_loadu_ps(l + i + 8 * q), vinv);
    tanh8_n(z);
#pragma GCC unroll 8
    for (int q = 0; q < kBlock; ++q) {
      z[q] = _mm256_mul_ps(vcap, z[q]);
      _mm256_storeu_ps(l + i + 8 * q, z[q]);
      z[q] = exp8(_mm256_sub_ps(z[q], vcap));
    }
#pragma GCC unroll 8
    for (int q = 0; q < kBlock; ++q) sum[q] = _mm256_add_ps(sum[q], z[q]);
  }
#pragma GCC unroll 8
  for (int q = 0; q < kBlock; ++q) acc = _mm256_add_ps(acc, sum[q]);
  return i;
}

// dlog == nullptr: the gradient overwrites logits (fp32); else it goes to dlog as bf16 and
// logits is left holding the capped logits z. cap 0: no soft-cap (z = l, dz/dl = 1: inv_cap 0).
void xent(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t V,
          float cap, float grad_scale, uint16_t* dlog) {
  const bool capped = cap > 0.0f;
  const float inv_cap = capped ? 1.0f / cap : 0.0f;
  const __m256 vcap = _mm256_set1_ps(cap), vinv = _mm256_set1_ps(inv_cap);
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("xent rows");
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; ++r) {
      float* l = logits + r * V;
      uint16_t* d = dlog ? dlog + r * V : nullptr;
      if (targets[r] < 0) {
        losses[r] = 0;
        if (grad_scale != 0.0f) {
          if (d) std::fill(d, d + V, uint16_t(0));
          else std::fill(l, l + V, 0.0f);
        }
        continue;
      }
      // Pass 1: z = cap tanh(l / cap), kept in l, and sum exp(z - cap). |z| <= cap, so the
      // shift by cap replaces the usual max pass and nothing overflows; past kXentShiftByCapMax
      // the shift is the row's max z, summed in a pass of its own.
      // Each line of logits fetched kXentPrefetchFloats ahead (cpu_ops.h says why).
      const bool small_cap = capped && cap <= kXentShiftByCapMax;
      __m256 acc = _mm256_setzero_ps(), zmax = _mm256_set1_ps(capped ? -cap : -INFINITY);
      int64_t i = small_cap ? small_cap_pass1(l, V, (rows - r) * V, vinv, vcap, acc) : 0;
      for (; i + 8 <= V; i += 8) {
        if ((i & 15) == 0 && r * V + i + kXentPrefetchFloats < rows * V)
          _mm_prefetch(reinterpret_cast<const char*>(l + i + kXentPrefetchFloats), _MM_HINT_T0);
        const __m256 z =
            capped ? _mm256_mul_ps(vcap, tanh8(_mm256_mul_ps(_mm256_loadu_ps(l + i), vinv))) : _mm256_loadu_ps(l + i);
        if (capped) _mm256_storeu_ps(l + i, z);
        if (small_cap) acc = _mm256_add_ps(acc, exp8(_mm256_sub_ps(z, vcap)));
        else zmax = _mm256_max_ps(zmax, z);
      }
      double sum = small_cap ? hsum(acc) : 0.0;
      float shift = cap;
      for (int64_t j = i; j < V; ++j) {
        if (capped) l[j] = cap * tanh1(l[j] * inv_cap);
        if (small_cap) sum += exp1(l[j] - cap);
      }
      if (!small_cap) {
        alignas(32) float m8[8];
        _mm256_store_ps(m8, zmax);
        shift = *std::max_element(m8, m8 + 8);
        for (int64_t j = i; j < V; ++j) shift = std::max(shift, l[j]);
        const __m256 vs = _mm256_set1_ps(shift);
        int64_t j = 0;
        for (; j + 8 <= V; j += 8) acc = _mm256_add_ps(acc, exp8(_mm256_sub_ps(_mm256_loadu_ps(l + j), vs)));
        sum = hsum(acc);
        for (; j < V; ++j) sum += exp1(l[j] - shift);
      }
      // The loss and the target's probability from the sum and the target's own term e_t:
      // -log(e_t / sum), e_t / sum, or z_t itself far below the shift (xent_avx512.cc says why).
      const float lse = shift + float(std::log(sum));
      const int64_t t = targets[r];
      const double et = double(exp1(l[t] - shift)), zt_shifted = double(l[t]) - double(shift);
      losses[r] = float(std::log(sum) - (zt_shifted > kXentTermFloor ? std::log(et) : zt_shifted));
      if (grad_scale == 0.0f) continue;
      // Pass 2: dL/dl = (softmax(z) - onehot) * dz/dl, dz/dl = 1 - (z / cap)^2.
      const __m256 vlse = _mm256_set1_ps(lse), vgs = _mm256_set1_ps(grad_scale), one = _mm256_set1_ps(1.0f);
      const float zt = l[t];
      for (i = 0; i + 8 <= V; i += 8) {
        const __m256 z = _mm256_loadu_ps(l + i);
        const __m256 p = exp8(_mm256_sub_ps(z, vlse));
        const __m256 u = _mm256_mul_ps(z, vinv);
        const __m256 g = _mm256_mul_ps(_mm256_mul_ps(vgs, p), _mm256_fnmadd_ps(u, u, one));
        if (d) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), bf16x8(g));
        else _mm256_storeu_ps(l + i, g);
      }
      for (; i < V; ++i) {
        const float u = l[i] * inv_cap, g = grad_scale * exp1(l[i] - lse) * (1.0f - u * u);
        if (d) d[i] = bf16_1(g);
        else l[i] = g;
      }
      // The target's element, with the one-hot term and the same derivative factor.
      const float ut = zt * inv_cap, dz = 1.0f - ut * ut, pt = float(et / sum);
      const float gt = grad_scale * pt * dz - grad_scale * dz;
      if (d) d[t] = bf16_1(gt);
      else l[t] = gt;
    }
  }
}

}  // namespace

void softcap_xent(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t V,
                  float cap, float grad_scale) {
  xent(ctx, logits, losses, targets, rows, V, cap, grad_scale, nullptr);
}
void softcap_xent_bf16_avx2(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows,
                            int64_t V, float cap, float grad_scale, uint16_t* dlogits) {
  xent(ctx, logits, losses, targets, rows, V, cap, grad_scale, dlogits);
}

}  // namespace nt::cpu
