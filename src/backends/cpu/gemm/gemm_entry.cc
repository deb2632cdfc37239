// SPDX-License-Identifier: MIT
// The GEMM entry points of the CPU kernel tables (gemm.h): each walks its op's routes
// (gemm_routes.cc) at its table's tier.
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/gemm/gemm_routes.h"

namespace nt::cpu {

namespace {
template <class C, class T>
GemmCall call(const ExecContext& ctx, C* c, const T* a, const T* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
              float beta) {
  return {.c = c,
          .a = a,
          .b = b,
          .m = m,
          .n = n,
          .k = k,
          .ta = ta,
          .tb = tb,
          .beta = beta,
          .threads = ctx.threads(),
          .ctx = &ctx};
}
}  // namespace

void matmul(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta,
            bool tb, float beta) {
  gemm_dispatch(GemmOp::kF32, Isa::kAvx2, call(ctx, c, a, b, m, n, k, ta, tb, beta));
}

void matmul_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                   bool ta, bool tb, float beta) {
  gemm_dispatch(GemmOp::kF32, Isa::kAvx512, call(ctx, c, a, b, m, n, k, ta, tb, beta));
}

void matmul_relu2_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n,
                         int64_t k, bool ta, bool tb, float beta, bool relu2_a) {
  GemmCall g = call(ctx, c, a, b, m, n, k, ta, tb, beta);
  g.relu2_a = relu2_a;
  gemm_dispatch(GemmOp::kF32Relu2, Isa::kAvx512, g);
}

void matmul_bf16_tiles(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb, float beta) {
  gemm_dispatch(GemmOp::kBf16, Isa::kAmx, call(ctx, c, a, b, m, n, k, ta, tb, beta));
}

void matmul_bf16_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                        int64_t k, bool ta, bool tb, float beta) {
  gemm_dispatch(GemmOp::kBf16, Isa::kAvx512Bf16, call(ctx, c, a, b, m, n, k, ta, tb, beta));
}

void matmul_bf16_widen(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb, float beta) {
  gemm_dispatch(GemmOp::kBf16, Isa::kAvx2, call(ctx, c, a, b, m, n, k, ta, tb, beta));
}

void matmul_bf16_out_tiles(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                           int64_t n, int64_t k, bool ta, bool tb) {
  gemm_dispatch(GemmOp::kBf16Out, Isa::kAmx, call(ctx, c, a, b, m, n, k, ta, tb, 0.0f));
}

void matmul_bf16_out_avx512(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                            int64_t n, int64_t k, bool ta, bool tb) {
  gemm_dispatch(GemmOp::kBf16Out, Isa::kAvx512Bf16, call(ctx, c, a, b, m, n, k, ta, tb, 0.0f));
}

void matmul_bf16_out_widen(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                           int64_t n, int64_t k, bool ta, bool tb) {
  gemm_dispatch(GemmOp::kBf16Out, Isa::kAvx2, call(ctx, c, a, b, m, n, k, ta, tb, 0.0f));
}

void matmul_bf16_relu2_tiles(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                             int64_t n, int64_t k, bool ta, bool tb, float beta, bool relu2_a) {
  GemmCall g = call(ctx, c, a, b, m, n, k, ta, tb, beta);
  g.relu2_a = relu2_a;
  gemm_dispatch(GemmOp::kBf16Relu2, Isa::kAmx, g);
}

void matmul_bf16_relu2_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                              int64_t n, int64_t k, bool ta, bool tb, float beta, bool relu2_a) {
  GemmCall g = call(ctx, c, a, b, m, n, k, ta, tb, beta);
  g.relu2_a = relu2_a;
  gemm_dispatch(GemmOp::kBf16Relu2, Isa::kAvx512Bf16, g);
}

void matmul_bf16_gelu_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                             int64_t n, int64_t k, bool ta, bool tb, float beta, bool gelu_a) {
  GemmCall g = call(ctx, c, a, b, m, n, k, ta, tb, beta);
  g.relu2_a = gelu_a, g.gelu = true;
  gemm_dispatch(GemmOp::kBf16Relu2, Isa::kAvx512Bf16, g);
}

void matmul_bf16_out_relu2_avx512(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* a,
                                  const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  GemmCall g = call(ctx, c, a, b, m, n, k, ta, tb, 0.0f);
  g.act = act;
  gemm_dispatch(GemmOp::kBf16OutRelu2, Isa::kAvx512Bf16, g);
}

void matmul_bf16_out_gelu_avx512(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* a,
                                 const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  GemmCall g = call(ctx, c, a, b, m, n, k, ta, tb, 0.0f);
  g.act = act, g.gelu = true;
  gemm_dispatch(GemmOp::kBf16OutRelu2, Isa::kAvx512Bf16, g);
}

void matmul_bf16_out_gelu_bwd_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* inp, const uint16_t* a,
                                     const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  GemmCall g = call(ctx, dinp, a, b, m, n, k, ta, tb, 0.0f);
  g.inp = inp, g.gelu = true;
  gemm_dispatch(GemmOp::kBf16OutRelu2Bwd, Isa::kAvx512Bf16, g);
}

void matmul_bf16_out_relu2_bwd_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* inp, const uint16_t* a,
                                      const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  GemmCall g = call(ctx, dinp, a, b, m, n, k, ta, tb, 0.0f);
  g.inp = inp;
  gemm_dispatch(GemmOp::kBf16OutRelu2Bwd, Isa::kAvx512Bf16, g);
}

void matmul_bf16_packed_b_tiles(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed_b,
                                int64_t m, int64_t n, int64_t k, bool ta, float beta) {
  gemm_dispatch(GemmOp::kBf16PackedB, Isa::kAmx, call(ctx, c, a, packed_b, m, n, k, ta, false, beta));
}

void matmul_bf16_packed_b_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed, int64_t m,
                                 int64_t n, int64_t k, bool ta, float beta) {
  gemm_dispatch(GemmOp::kBf16PackedB, Isa::kAvx512Bf16, call(ctx, c, a, packed, m, n, k, ta, false, beta));
}

}  // namespace nt::cpu
