// SPDX-License-Identifier: MIT
// The AVX2 floor of the bf16 conversions and of the bf16 activation: the reference's scalar
// rounding (nearest even on the bit pattern), which the compiler vectorises.
#include "backends/cpu/cpu_ops.h"
#include "backends/ref/ops_ref.h"

namespace nt::cpu {

void to_bf16_avx2(const ExecContext& ctx, uint16_t* dst, const float* src, int64_t n) {
#pragma omp parallel for simd schedule(static) num_threads(ctx.threads())
  for (int64_t i = 0; i < n; ++i) dst[i] = ref::to_bf16_1(src[i]);
}

void to_bf16_row_avx2(uint16_t* dst, const float* src, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) dst[j] = ref::to_bf16_1(src[j]);
}

void to_bf16_rows_avx2(const ExecContext& ctx, uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows,
                       int64_t cols) {
#pragma omp parallel for schedule(static) if (rows * cols > 32768) num_threads(ctx.threads())
  for (int64_t r = 0; r < rows; ++r) to_bf16_row_avx2(dst + r * ld_dst, src + r * cols, cols);
}

void relu2_fwd_bf16_avx2(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n) {
#pragma omp parallel for simd schedule(static) num_threads(ctx.threads())
  for (int64_t i = 0; i < n; ++i) {
    const float x = ref::from_bf16_1(inp[i]), r = x > 0.0f ? x : 0.0f;
    out[i] = ref::to_bf16_1(r * r);
  }
}

void relu2_bwd_bf16_avx2(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n) {
#pragma omp parallel for simd schedule(static) num_threads(ctx.threads())
  for (int64_t i = 0; i < n; ++i) {
    const float x = ref::from_bf16_1(inp[i]), r = x > 0.0f ? x : 0.0f;
    dinp[i] = ref::to_bf16_1(2.0f * r * ref::from_bf16_1(dout[i]));
  }
}

}  // namespace nt::cpu
