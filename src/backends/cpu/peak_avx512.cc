// SPDX-License-Identifier: MIT
// AVX-512 peak loops (built with -mavx512*; called only after a CPUID check).
#include <immintrin.h>

#include "backends/cpu/peak.h"

namespace nt::cpu {

// Twenty-four named accumulators (an array would be kept in memory); the empty asm keeps the
// compiler from folding the chains. vdpbf16ps needs ~24 independent chains to keep both ports
// busy on Zen 5; FMA needs 8-12, and 24 costs it nothing.
#define NT_PEAK_LOOP(OP)                                                                        \
  for (int64_t it = 0; it < n; ++it) {                                                          \
    a0 = OP(a0), a1 = OP(a1), a2 = OP(a2), a3 = OP(a3), a4 = OP(a4), a5 = OP(a5);               \
    a6 = OP(a6), a7 = OP(a7), a8 = OP(a8), a9 = OP(a9), a10 = OP(a10), a11 = OP(a11);           \
    b0 = OP(b0), b1 = OP(b1), b2 = OP(b2), b3 = OP(b3), b4 = OP(b4), b5 = OP(b5);               \
    b6 = OP(b6), b7 = OP(b7), b8 = OP(b8), b9 = OP(b9), b10 = OP(b10), b11 = OP(b11);           \
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));          \
    __asm__ volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));        \
    __asm__ volatile("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3), "+v"(b4), "+v"(b5));          \
    __asm__ volatile("" : "+v"(b6), "+v"(b7), "+v"(b8), "+v"(b9), "+v"(b10), "+v"(b11));        \
  }                                                                                             \
  a0 = _mm512_add_ps(a0, b0), a1 = _mm512_add_ps(a1, b1), a2 = _mm512_add_ps(a2, b2);           \
  a3 = _mm512_add_ps(a3, b3), a4 = _mm512_add_ps(a4, b4), a5 = _mm512_add_ps(a5, b5);           \
  a6 = _mm512_add_ps(a6, b6), a7 = _mm512_add_ps(a7, b7), a8 = _mm512_add_ps(a8, b8);           \
  a9 = _mm512_add_ps(a9, b9), a10 = _mm512_add_ps(a10, b10), a11 = _mm512_add_ps(a11, b11);     \
  return _mm512_reduce_add_ps(_mm512_add_ps(                                                    \
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),                \
                    _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))),               \
      _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));

double peak_fma_avx512_gflops(double seconds) {
  return timed_parallel(seconds, 24.0 * 16 * 2, [](int64_t n) {
    __m512 a0 = _mm512_set1_ps(1e-3f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0;
    __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0, b8 = a0, b9 = a0, b10 = a0,
           b11 = a0;
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
#define NT_FMA(v) _mm512_fmadd_ps(v, x, y)
    NT_PEAK_LOOP(NT_FMA)
#undef NT_FMA
  });
}

double peak_bf16_avx512_gflops(double seconds) {
  // Each vdpbf16ps does 32 bf16 multiply-adds into 16 fp32 lanes: 64 FLOP.
  return timed_parallel(seconds, 24.0 * 64, [](int64_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0,
           a9 = a0, a10 = a0, a11 = a0;
    __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0, b6 = a0, b7 = a0, b8 = a0, b9 = a0, b10 = a0,
           b11 = a0;
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
    const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(3e-3f));
#define NT_DP(v) _mm512_dpbf16_ps(v, x, y)
    NT_PEAK_LOOP(NT_DP)
#undef NT_DP
  });
}
#undef NT_PEAK_LOOP

}  // namespace nt::cpu
