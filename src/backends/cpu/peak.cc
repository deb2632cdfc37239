// SPDX-License-Identifier: MIT
// The AVX2 FMA peak loop, the triad (the build floor), and the choice of peak loop for a
// precision on this CPU.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "backends/cpu/peak.h"
#include "core/buffer.h"
#include "core/system.h"

namespace nt::cpu {

double peak_fma_avx2_gflops(double seconds) {
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    // Twelve named accumulators (an array would live in memory); the empty asm stops folding.
    __m256 a0 = _mm256_set1_ps(1e-3f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0;
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    const auto t0 = std::chrono::steady_clock::now();
    int64_t iters = 0;
    double dt = 0;
    do {
      for (int64_t it = 0; it < 100000; ++it) {
        a0 = _mm256_fmadd_ps(a0, x, y), a1 = _mm256_fmadd_ps(a1, x, y), a2 = _mm256_fmadd_ps(a2, x, y);
        a3 = _mm256_fmadd_ps(a3, x, y), a4 = _mm256_fmadd_ps(a4, x, y), a5 = _mm256_fmadd_ps(a5, x, y);
        a6 = _mm256_fmadd_ps(a6, x, y), a7 = _mm256_fmadd_ps(a7, x, y), a8 = _mm256_fmadd_ps(a8, x, y);
        a9 = _mm256_fmadd_ps(a9, x, y), a10 = _mm256_fmadd_ps(a10, x, y), a11 = _mm256_fmadd_ps(a11, x, y);
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));
        __asm__ volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
      }
      iters += 100000;
      dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (dt < seconds);
    const __m256 s = _mm256_add_ps(
        _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                      _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7))),
        _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    alignas(32) float out[8];
    _mm256_store_ps(out, s);
    total += double(iters) * 12 * 8 * 2 / dt * 1e-9 + (out[0] == 12345.0f ? 1e-9 : 0.0);
  }
  return total;
}

ComputePeak measure_compute_peak(bool bf16, double seconds, int tries) {
  const CpuFeatures cf = cpu_features();
  const bool avx512 = cf.avx512f && cf.avx512bw, dot = avx512 && cf.avx512bf16, amx = dot && cf.amx_bf16;
  ComputePeak peak;
  double (*loop)(double) = nullptr;
  if (bf16 && amx) loop = peak_bf16_amx_gflops, peak.unit = "AMX bf16 tiles";
  else if (bf16 && dot) loop = peak_bf16_avx512_gflops, peak.unit = "AVX-512-BF16 dot products";
  else if (avx512) loop = peak_fma_avx512_gflops, peak.unit = "fp32 AVX-512 FMA";
  else loop = peak_fma_avx2_gflops, peak.unit = "fp32 AVX2 FMA";
  // Each thread times the loop on its own core, all at once (the loop's own parallel region,
  // nested here, runs on the calling thread), keeping its best try: a try in which the host
  // took one core away then costs only that thread's figure for that try (summed over the
  // threads of each try, one such moment in every try would halve the peak).
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    omp_set_num_threads(1);
    double best = 0;
    for (int i = 0; i < tries; ++i) {
#pragma omp barrier
      best = std::max(best, loop(seconds));
    }
    total += best;
  }
  peak.gflops = total;
  return peak;
}

double triad_gbs(int64_t n, int reps) {
  Buffer<float> a{size_t(n)}, b{size_t(n)}, c{size_t(n)};
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) b[size_t(i)] = 1.0f, c[size_t(i)] = 2.0f, a[size_t(i)] = 0.0f;
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    float* pa = a.data();
    const float *pb = b.data(), *pc = c.data();
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt < best) best = dt;
  }
  return double(n) * 12.0 / best * 1e-9;
}

}  // namespace nt::cpu
