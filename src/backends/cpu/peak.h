// SPDX-License-Identifier: MIT
// Micro-kernels that measure this machine's limits, for `nanotrain bench` and MFU: an FMA loop
// with enough independent accumulators to saturate the FMA units, a bf16 dot-product loop, and
// a STREAM-like triad. Each runs on every OpenMP thread at once and returns the total rate.
#pragma once
#include <cstdint>

namespace nt::cpu {

// fp32 FMA GFLOP/s with 512-bit vectors (needs avx512f) or 256-bit (AVX2 + FMA).
double peak_fma_avx512_gflops(double seconds);
double peak_fma_avx2_gflops(double seconds);
// vdpbf16ps GFLOP/s (2 FLOP per bf16 pair; needs avx512bf16).
double peak_bf16_avx512_gflops(double seconds);
// a[i] = b[i] + s * c[i] over arrays far larger than the caches: GB/s (3 x 4 bytes per i).
double triad_gbs(int64_t n, int reps);

}  // namespace nt::cpu
