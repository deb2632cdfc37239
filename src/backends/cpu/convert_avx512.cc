// SPDX-License-Identifier: MIT
// fp32 -> bf16 conversions with AVX-512-BF16 (vcvtneps2bf16: round to nearest even, subnormal
// inputs flushed to zero), and the bf16 MLP activations' own passes (ReLU², GELU) on the same
// conversions. Built with -mavx512*; called only when cpu_features() reports
// avx512f, avx512bw and avx512bf16 (cpu_table.cc).
#include <immintrin.h>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx512.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {
// 16 bf16 (masked) widened to fp32: the bits shifted into the high half.
inline __m512 widen16(const uint16_t* p, __mmask16 m) { return widen_bf16x16(load_masked_epi16x16(m, p)); }

// An elementwise pass in chunks over the threads; op(i, mask) computes and stores the 16
// elements from i (fewer at the end, as the mask says). Whole vectors get a constant full mask,
// which the compiler turns into plain loads and stores: masked ones streaming from memory run at
// a fraction of the rate on Zen 5.
template <class Op>
void in_chunks(const ExecContext& ctx, int64_t n, const char* zone, Op op) {
  constexpr int64_t kChunk = 16384;
#pragma omp parallel num_threads(ctx.threads()) if (n > 2 * kChunk)
  {
    profile::WorkZone work(zone);
#pragma omp for schedule(static) nowait
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
      const int64_t c1 = c0 + kChunk < n ? c0 + kChunk : n;
      int64_t i = c0;
      for (; i + 16 <= c1; i += 16) op(i, __mmask16(0xffff));
      if (i < c1) op(i, lanes16(c1 - i));
    }
  }
}
}  // namespace

void relu2_fwd_bf16_avx512(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n) {
  const __m512 zero = _mm512_setzero_ps();
  in_chunks(ctx, n, "relu2 fwd bf16", [&](int64_t i, __mmask16 m) {
    const __m512 r = _mm512_max_ps(widen16(inp + i, m), zero);
    store_masked_epi16x16(out + i, m, bf16x16(_mm512_mul_ps(r, r)));
  });
}

void relu2_bwd_bf16_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp,
                           int64_t n) {
  const __m512 zero = _mm512_setzero_ps(), two = _mm512_set1_ps(2.0f);
  in_chunks(ctx, n, "relu2 bwd bf16", [&](int64_t i, __mmask16 m) {
    const __m512 r = _mm512_max_ps(widen16(inp + i, m), zero);
    store_masked_epi16x16(dinp + i, m, bf16x16(_mm512_mul_ps(_mm512_mul_ps(two, r), widen16(dout + i, m))));
  });
}

// GELU by simd_avx512.h's gelu16 / gelu_grad16: the bits the fused epilogues and packers write.
void gelu_fwd_bf16_avx512(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n) {
  in_chunks(ctx, n, "gelu fwd bf16", [&](int64_t i, __mmask16 m) {
    store_masked_epi16x16(out + i, m, bf16x16(gelu16(widen16(inp + i, m))));
  });
}

void gelu_bwd_bf16_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp,
                          int64_t n) {
  in_chunks(ctx, n, "gelu bwd bf16", [&](int64_t i, __mmask16 m) {
    store_masked_epi16x16(dinp + i, m, bf16x16(_mm512_mul_ps(gelu_grad16(widen16(inp + i, m)), widen16(dout + i, m))));
  });
}

void to_bf16_avx512(const ExecContext& ctx, uint16_t* dst, const float* src, int64_t n) {
  in_chunks(ctx, n, "to bf16",
            [&](int64_t i, __mmask16 m) { store_masked_epi16x16(dst + i, m, bf16x16(load_masked_ps(m, src + i))); });
}
void to_bf16_row_avx512(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = lanes16(n - j);
    store_masked_epi16x16(dst + j, m, bf16x16(load_masked_ps(m, src + j)));
  }
}
void to_bf16_rows_avx512(const ExecContext& ctx, uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows,
                         int64_t cols) {
#pragma omp parallel num_threads(ctx.threads()) if (rows * cols > 32768)
  {
    profile::WorkZone work("to bf16 rows");
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; ++r) to_bf16_row_avx512(dst + r * ld_dst, src + r * cols, cols);
  }
}

}  // namespace nt::cpu
