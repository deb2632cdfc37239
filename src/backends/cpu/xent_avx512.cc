// SPDX-License-Identifier: MIT
// xent_cpu.cc's soft-capped cross-entropy at 16 lanes (exp16 / tanh16 of simd_avx512.h, the
// same polynomial), with the bf16 gradient rounded by vcvtneps2bf16. One difference: each row's
// z and exp(z - cap) go to per-thread scratch, so the second pass computes no exp and the logits
// are only read (with grad_scale 0 they are left as they were). Built with -mavx512*; called
// only after a CPUID check.
#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx512.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

// Pass 1 of a row where cap <= kXentShiftByCapMax, kBlock vectors at a time: u = tanh(l / cap)
// into urow, exp(cap u - cap) into e, the exps summed into acc. Each step runs across the block's
// vectors (tanh16_n), so that the core overlaps their chains of dependent operations (tanh's, then
// the exp's; kBlock 8 measured best). avail: the logits from l on (the next rows' lines are
// fetched too). Returns the elements done.
constexpr int kBlock = 8;
int64_t small_cap_pass1(const float* l, float* urow, float* e, int64_t V, int64_t avail, __m512 vinv, __m512 vcap,
                        __m512& acc) {
  __m512 sum[kBlock];
#pragma GCC unroll 8
  for (int q = 0; q < kBlock; ++q) sum[q] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 * kBlock <= V; i += 16 * kBlock) {
    // Each line of logits fetched kXentPrefetchFloats ahead (cpu_ops.h says why).
    if (i + 16 * kBlock + kXentPrefetchFloats <= avail)
      for (int q = 0; q < kBlock; ++q)
        _mm_prefetch(reinterpret_cast<const char*>(l + i + 16 * q + kXentPrefetchFloats), _MM_HINT_T0);
    __m512 u[kBlock], ez[kBlock];
#pragma GCC unroll 8
    for (int q = 0; q < kBlock; ++q) u[q] = _mm512_mul_ps(_mm512_loadu_ps(l + i + 16 * q), vinv);
    tanh16_n(u);
#pragma GCC unroll 8
    for (int q = 0; q < kBlock; ++q) {
      _mm512_storeu_ps(urow + i + 16 * q, u[q]);
      ez[q] = exp16_in_range(_mm512_fmsub_ps(vcap, u[q], vcap));
    }
#pragma GCC unroll 8
    for (int q = 0; q < kBlock; ++q) {
      _mm512_storeu_ps(e + i + 16 * q, ez[q]);
      sum[q] = _mm512_add_ps(sum[q], ez[q]);
    }
  }
#pragma GCC unroll 8
  for (int q = 0; q < kBlock; ++q) acc = _mm512_add_ps(acc, sum[q]);
  return i;
}

// kSmallCap: cap <= kXentShiftByCapMax, so that the softmax's exp(z - cap) is in the exp's range
// (no clamp, no max pass).
template <bool kSmallCap>
void xent(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t V,
          float cap, float grad_scale, uint16_t* dlog) {
  const float inv_cap = 1.0f / cap;
  const __m512 vcap = _mm512_set1_ps(cap), vinv = _mm512_set1_ps(inv_cap);
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("xent rows avx512");
    // One row's u and exp(z - cap), side by side: a row at a time, they stay in the core's cache,
    // and the logits are only read (no dirty lines of z to write back).
    float* urow = static_cast<float*>(thread_scratch(ctx, kScratchXent, 2 * size_t(V) * sizeof(float)));
    float* e = urow + V;
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; ++r) {
      float* l = logits + r * V;
      uint16_t* d = dlog ? dlog + r * V : nullptr;
      if (targets[r] < 0) {
        losses[r] = 0;
        if (grad_scale != 0.0f)  // explicit loops: no standard-library code in an AVX-512 unit
          for (int64_t i = 0; i < V; i += 16) {
            if (d) store_masked_epi16x16(d + i, lanes16(V - i), _mm256_setzero_si256());
            else store_masked_ps(l + i, lanes16(V - i), _mm512_setzero_ps());
          }
        continue;
      }
      // Pass 1: u = tanh(l / cap), kept in urow (z = cap u), and sum exp(z - cap) (|z| <= cap:
      // no max pass), each term kept in e for pass 2, which then needs no exp of its own. Past
      // kXentShiftByCapMax the terms are shifted by the row's max z instead, in a pass of their
      // own.
      __m512 acc = _mm512_setzero_ps(), umax = _mm512_set1_ps(-1.0f);
      int64_t i0 = 0;  // where the vector-at-a-time loop below starts
      if constexpr (kSmallCap) i0 = small_cap_pass1(l, urow, e, V, (rows - r) * V, vinv, vcap, acc);
      // Each line of logits fetched kXentPrefetchFloats ahead (cpu_ops.h says why).
      for (int64_t i = i0; i < V; i += 16) {
        const __mmask16 m = lanes16(V - i);
        if (r * V + i + kXentPrefetchFloats < rows * V)
          _mm_prefetch(reinterpret_cast<const char*>(l + i + kXentPrefetchFloats), _MM_HINT_T0);
        const __m512 u = tanh16(_mm512_mul_ps(load_masked_ps(m, l + i), vinv));
        store_masked_ps(urow + i, m, u);
        if constexpr (kSmallCap) {
          const __m512 ez = exp16_in_range(_mm512_fmsub_ps(vcap, u, vcap));
          store_masked_ps(e + i, m, ez);
          acc = _mm512_mask_add_ps(acc, m, acc, ez);
        } else {
          umax = _mm512_mask_max_ps(umax, m, umax, u);
        }
      }
      float shift = cap;
      if constexpr (!kSmallCap) {
        shift = cap * _mm512_reduce_max_ps(umax);
        const __m512 vshift = _mm512_set1_ps(shift);
        for (int64_t i = 0; i < V; i += 16) {
          const __mmask16 m = lanes16(V - i);
          const __m512 ez = exp16(_mm512_fmsub_ps(vcap, load_masked_ps(m, urow + i), vshift));
          store_masked_ps(e + i, m, ez);
          acc = _mm512_mask_add_ps(acc, m, acc, ez);
        }
      }
      // The loss and the target's probability from the sum S of the terms and the target's own
      // term: -log(e_t / S), e_t / S. (With lse - z_t, a one-word vocabulary's loss was not 0:
      // the exp's last-bit error.) A term near the exp's floor takes the loss from z_t itself.
      const double sum = double(_mm512_reduce_add_ps(acc));
      const int64_t t = targets[r];
      const double et = double(e[t]), zt = double(cap) * double(urow[t]) - double(shift);
      losses[r] = float(std::log(sum) - (zt > kXentTermFloor ? std::log(et) : zt));
      if (grad_scale == 0.0f) continue;
      // Pass 2: dL/dl = (softmax(z) - onehot) * dz/dl, dz/dl = 1 - (z / cap)^2, with
      // softmax(z) = exp(z - cap) / S.
      const __m512 vscale = _mm512_set1_ps(float(double(grad_scale) / sum));
      const __m512 one = _mm512_set1_ps(1.0f);
      for (int64_t i = 0; i < V; i += 16) {
        const __mmask16 m = lanes16(V - i);
        const __m512 u = load_masked_ps(m, urow + i);
        const __m512 p = _mm512_mul_ps(vscale, load_masked_ps(m, e + i));
        const __m512 g = _mm512_mul_ps(p, _mm512_fnmadd_ps(u, u, one));
        if (d) store_masked_epi16x16(d + i, m, bf16x16(g));
        else store_masked_ps(l + i, m, g);
      }
      // The target's element, with the one-hot term: p - 1 cancels exactly where p rounds to 1
      // (a one-word vocabulary gives 0).
      const float ut = urow[t], dz = 1.0f - ut * ut;
      const float pt = float(et / sum);
      const float gt = grad_scale * pt * dz - grad_scale * dz;
      if (d) d[t] = uint16_t(_mm256_extract_epi16(bf16x16(_mm512_set1_ps(gt)), 0));
      else l[t] = gt;
    }
  }
}

void xent_by_cap(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t V,
                 float cap, float grad_scale, uint16_t* dlog) {
  // No soft-cap (cap 0): xent_cpu.cc's pass, which takes that case (no tanh to save lanes on).
  if (cap <= 0.0f) {
    if (dlog) softcap_xent_bf16_avx2(ctx, logits, losses, targets, rows, V, cap, grad_scale, dlog);
    else softcap_xent(ctx, logits, losses, targets, rows, V, cap, grad_scale);
  } else if (cap <= kXentShiftByCapMax) xent<true>(ctx, logits, losses, targets, rows, V, cap, grad_scale, dlog);
  else xent<false>(ctx, logits, losses, targets, rows, V, cap, grad_scale, dlog);
}

}  // namespace

void softcap_xent_avx512(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows,
                         int64_t V, float cap, float grad_scale) {
  xent_by_cap(ctx, logits, losses, targets, rows, V, cap, grad_scale, nullptr);
}
void softcap_xent_bf16_avx512(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets,
                              int64_t rows, int64_t V, float cap, float grad_scale, uint16_t* dlogits) {
  xent_by_cap(ctx, logits, losses, targets, rows, V, cap, grad_scale, dlogits);
}

}  // namespace nt::cpu
