// SPDX-License-Identifier: MIT
// Micro-kernels that measure this machine's limits, for `nanotrain bench` and MFU: an FMA loop
// with enough independent accumulators to saturate the FMA units, a bf16 dot-product loop, and
// a STREAM-like triad. Each runs on every OpenMP thread at once and returns the total rate.
#pragma once
#include <omp.h>

#include <chrono>
#include <cstdint>

#include "kernels/backend.h"  // ComputePeak

namespace nt::cpu {

// fp32 FMA GFLOP/s with 512-bit vectors (needs avx512f) or 256-bit (AVX2 + FMA).
double peak_fma_avx512_gflops(double seconds);
double peak_fma_avx2_gflops(double seconds);
// vdpbf16ps GFLOP/s (2 FLOP per bf16 pair; needs avx512bf16).
double peak_bf16_avx512_gflops(double seconds);
// AMX tdpbf16ps GFLOP/s (needs cpu_features().amx_bf16).
double peak_bf16_amx_gflops(double seconds);
// The same with every step's four operand tiles loaded from L1 (2 x 2 accumulator tiles): the
// bound of any GEMM on tiles where loading a tile costs more than multiplying one.
double peak_bf16_amx_loaded_gflops(double seconds);
// The compute peak a run in bf16 or fp32 can reach on this CPU, measured now: every thread's
// best of `tries` runs of `seconds` each, the threads running side by side, summed (other
// processes can only lower a try). bf16: the AMX tiles, else
// AVX-512-BF16 dot products, else the fp32 FMA peak (bf16 GEMMs then run on the fp32 units).
// fp32: AVX-512 FMA, else AVX2 FMA. `unit` names what was measured, for the MFU's label.
ComputePeak measure_compute_peak(bool bf16, double seconds, int tries);
// a[i] = b[i] + s * c[i] over arrays far larger than the caches: GB/s (3 x 4 bytes per i).
double triad_gbs(int64_t n, int reps);

// Runs body(100000) on every thread until `seconds` pass; body does 100000 iterations of
// flops_per_iter each and returns a value that depends on them (so they are not optimised away).
// Returns the sum of the threads' rates in GFLOP/s.
template <class Body>
double timed_parallel(double seconds, double flops_per_iter, Body body) {
  double total_flops = 0;
#pragma omp parallel reduction(+ : total_flops)
  {
    const auto t0 = std::chrono::steady_clock::now();
    int64_t iters = 0;
    float sink = 0;
    do {
      sink += body(100000);
      iters += 100000;
    } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_flops += double(iters) * flops_per_iter / dt + (sink == 12345.0f ? 1.0 : 0.0);
  }
  return total_flops * 1e-9;
}

}  // namespace nt::cpu
