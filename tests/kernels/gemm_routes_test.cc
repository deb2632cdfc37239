// SPDX-License-Identifier: MIT
// The CPU backend's GEMM routes (backends/cpu/gemm/gemm_routes.h): the route each entry point
// takes for the model's products, the table against the rules it replaced (written out here as
// if-chains, over a grid of calls), and the table's text.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "backends/cpu/gemm/gemm_routes.h"

namespace nt {
namespace {

using cpu::GemmCall;
using cpu::GemmOp;
using cpu::Isa;

float g_a[1], g_b[1], g_c[1];  // the walk compares operand addresses only

GemmCall make_call(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, int threads = 2,
                   bool same = false, bool relu2_a = false) {
  GemmCall c{.c = g_c, .a = g_a, .b = same ? g_a : g_b, .m = m, .n = n, .k = k, .ta = ta, .tb = tb, .beta = beta};
  c.relu2_a = relu2_a;
  c.threads = threads;
  return c;
}

std::string route(GemmOp op, Isa tier, const GemmCall& c) {
  const cpu::GemmRoute* r = cpu::gemm_route_for(op, tier, c);
  return r ? r->kernel->name : "(none)";
}

// ---- The rules the table replaced, as they read in the entry points (kernel names as the table
// has them; oneDNN's matmul primitive taken to have a jit kernel). ----
bool gram(const GemmCall& c) {
  return c.a == c.b && !c.ta && c.tb && c.m == c.n && c.beta == 0.0f && c.m >= 128 &&
         (c.k >= 2 * c.m || c.threads == 1);
}
bool pairs(const GemmCall& c) { return c.m >= 1 && c.n >= 1 && c.k >= 2 && c.k % 2 == 0; }
bool set_or_add(const GemmCall& c) { return c.beta == 0.0f || c.beta == 1.0f; }
bool tiles_gain(int64_t m, int64_t n, int64_t k, bool ta) {
  if (ta && k >= 4096) return (m < n ? m : n) >= 512 || m * n >= (int64_t(1) << 19);
  return m >= 1024 || (k >= 4096 && m >= 256 && n >= 256);
}

std::string old_matmul(const GemmCall& c) {
  if (c.m == 0 || c.n == 0) return "none (C is empty)";
  if (gram(c)) return c.threads == 1 ? "oneDNN sgemm on the upper block rows, mirrored" : "oneDNN matmul, mirrored";
  if (!c.ta && c.tb && c.k > c.n) return "oneDNN matmul";
  if (c.ta && !c.tb && c.m >= 2 * c.n) return "oneDNN matmul";
  return "oneDNN sgemm";
}

std::string old_matmul_avx512(const GemmCall& c) {
  const int64_t m = c.m, n = c.n, k = c.k;
  if (c.threads == 1) {
    if (gram(c) && k >= 2 && k % 2 == 0) return "gram_f32_avx512";
    if (!c.ta && !c.tb && m == k && n >= m && set_or_add(c) && pairs(c)) return "sgemm_nn_avx512";
  }
  if (!c.ta && c.tb && k >= n && m >= 2 * n && set_or_add(c) && pairs(c)) return "sgemm_nt_avx512";
  if (!c.ta && !c.tb && k >= n && m >= 8 * n && n >= 512 && set_or_add(c) && pairs(c)) return "sgemm_nn_avx512";
  if (c.ta && !c.tb && m >= 2 * n && n >= 512 && set_or_add(c) && pairs(c)) return "sgemm_at_avx512";
  return old_matmul(c);
}

std::string old_matmul_relu2_avx512(const GemmCall& c) {
  if (c.relu2_a && !c.ta && c.tb && set_or_add(c) && c.k >= c.n && c.m >= 2 * c.n && pairs(c))
    return "sgemm_nt_avx512 (relu2 A)";
  return "relu2_fwd, then matmul_avx512";
}

std::string old_bf16_tiles(const GemmCall& c) {
  if (c.m == 0 || c.n == 0 || c.k == 0) return "matmul_bf16_onednn";
  if (!tiles_gain(c.m, c.n, c.k, c.ta) || gram(c) || (c.ta && c.tb)) return "matmul_bf16_onednn";
  return "matmul_bf16_amx";
}

std::string old_bf16_avx512(const GemmCall& c) {
  if (set_or_add(c) && !gram(c)) {
    if (c.ta && !c.tb) {
      if (pairs(c)) return "gemm_at_f32_avx512";
    } else if (!c.ta && pairs(c)) {
      return "gemm_rows_f32_avx512";
    }
  }
  return "matmul_bf16_onednn";
}

std::string old_bf16_relu2_tiles(const GemmCall& c) {
  if (c.m > 0 && c.n > 0 && c.k > 0 && tiles_gain(c.m, c.n, c.k, c.ta) && !(c.ta && c.tb))
    return "matmul_bf16_amx (relu2 operand)";
  return "relu2_fwd_bf16, then matmul_bf16_tiles";
}

std::string old_bf16_relu2_avx512(const GemmCall& c) {
  if (c.ta && !c.tb && !c.relu2_a && set_or_add(c) && pairs(c)) return "gemm_at_f32_avx512 (relu2 B)";
  return "relu2_fwd_bf16, then matmul_bf16_avx512";
}

std::string old_bf16_out_tiles(const GemmCall& c) {
  if (c.m == 0 || c.n == 0 || c.k == 0) return "matmul_bf16_out_onednn";
  const bool gain = tiles_gain(c.m, c.n, c.k, c.ta) || (c.threads == 1 && !c.ta && c.m >= 512 && c.n >= 2048);
  if (!gain || (c.ta && c.tb)) return "matmul_bf16_out_onednn";
  return "matmul_bf16_amx (bf16 C)";
}

std::string old_bf16_out_avx512(const GemmCall& c, const char* ours, const char* onednn) {
  return !c.ta && pairs(c) ? ours : onednn;
}

std::string old_packed_b_tiles(const GemmCall& c) {
  if (c.m == 0 || c.n == 0) return "none (C is empty)";
  if (c.k == 0) return "C = beta C";
  return "matmul_bf16_amx (packed B)";
}

std::string old_packed_b_avx512(const GemmCall& c) {
  if (c.m < 1 || c.n < 1) return "none (C is empty)";
  if (c.k % 2 == 0 && !c.ta && set_or_add(c)) return "gemm_rows_f32_avx512 (packed panels)";
  return "matmul_bf16_onednn on op(B) out of the packed form";
}

TEST(KernelGemmRoutes, MatchTheRulesTheyReplaceOnAGridOfCalls) {
  const int64_t sizes[] = {0, 1, 3, 64, 127, 128, 255, 256, 384, 511, 512, 1024, 1536, 2048, 4096, 8192};
  const float betas[] = {0.0f, 1.0f, 0.5f};
  int64_t checked = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes)
        for (int t = 0; t < 4; ++t)
          for (float beta : betas)
            for (int threads : {1, 2})
              for (bool same : {false, true}) {
                if (same && m != n) continue;
                const bool ta = t & 1, tb = t & 2;
                const GemmCall c = make_call(m, n, k, ta, tb, beta, threads, same);
                GemmCall r2 = c;
                const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                                         " ta " + std::to_string(ta) + " tb " + std::to_string(tb) + " beta " +
                                         std::to_string(beta) + " threads " + std::to_string(threads) +
                                         (same ? " a == b" : "");
                ASSERT_EQ(route(GemmOp::kF32, Isa::kAvx2, c), old_matmul(c)) << what;
                ASSERT_EQ(route(GemmOp::kF32, Isa::kAvx512, c), old_matmul_avx512(c)) << what;
                ASSERT_EQ(route(GemmOp::kBf16, Isa::kAmx, c), old_bf16_tiles(c)) << what;
                ASSERT_EQ(route(GemmOp::kBf16, Isa::kAvx512Bf16, c), old_bf16_avx512(c)) << what;
                ASSERT_EQ(route(GemmOp::kBf16, Isa::kAvx2, c), "widen to fp32, then matmul") << what;
                for (bool relu2_a : {false, true}) {
                  r2.relu2_a = relu2_a;
                  ASSERT_EQ(route(GemmOp::kF32Relu2, Isa::kAvx512, r2), old_matmul_relu2_avx512(r2)) << what;
                  ASSERT_EQ(route(GemmOp::kBf16Relu2, Isa::kAmx, r2), old_bf16_relu2_tiles(r2)) << what;
                  ASSERT_EQ(route(GemmOp::kBf16Relu2, Isa::kAvx512Bf16, r2), old_bf16_relu2_avx512(r2)) << what;
                }
                if (beta == 0.0f) {  // the bf16-C ops have none
                  ASSERT_EQ(route(GemmOp::kBf16Out, Isa::kAmx, c), old_bf16_out_tiles(c)) << what;
                  ASSERT_EQ(route(GemmOp::kBf16Out, Isa::kAvx512Bf16, c),
                            old_bf16_out_avx512(c, "gemm_rows_bf16_avx512", "matmul_bf16_out_onednn"))
                      << what;
                  ASSERT_EQ(route(GemmOp::kBf16Out, Isa::kAvx2, c), "widen to fp32, matmul, round to bf16") << what;
                  ASSERT_EQ(route(GemmOp::kBf16OutRelu2, Isa::kAvx512Bf16, c),
                            old_bf16_out_avx512(c, "gemm_rows_bf16_avx512 (and relu2(C) or GELU(C))",
                                                "matmul_bf16_out_onednn, then relu2_fwd_bf16 (gelu_fwd_bf16)"))
                      << what;
                  ASSERT_EQ(route(GemmOp::kBf16OutRelu2Bwd, Isa::kAvx512Bf16, c),
                            old_bf16_out_avx512(c, "gemm_rows_bf16_avx512 (relu2's or GELU's gradient)",
                                                "matmul_bf16_out_onednn into scratch, then relu2_bwd_bf16 (gelu_bwd_bf16)"))
                      << what;
                }
                if (!tb && !same) {  // packed op(B): never transposed, never A's alias
                  ASSERT_EQ(route(GemmOp::kBf16PackedB, Isa::kAmx, c), old_packed_b_tiles(c)) << what;
                  ASSERT_EQ(route(GemmOp::kBf16PackedB, Isa::kAvx512Bf16, c), old_packed_b_avx512(c)) << what;
                }
                ++checked;
              }
  EXPECT_GT(checked, 10000);
}

// The model's products at depth 4, 6 and 8 (C = 256, 384, 512; F = 4 C; q, k, v each H D = C
// wide; 8192 tokens a step; the head's rows 1024 a chunk, V 8192), and Newton-Schulz's on 1 and 2
// threads, with the route each entry point takes.
struct Expect {
  const char* what;
  GemmOp op;
  Isa tier;
  GemmCall call;
  const char* kernel;
};

std::vector<Expect> model_calls() {
  const int64_t N = 8192, V = 8192, R = 1024;
  using enum GemmOp;
  using enum Isa;
  std::vector<Expect> e;
  auto mk = [](int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, int threads = 2, bool same = false,
               bool relu2_a = false) { return make_call(m, n, k, ta, tb, beta, threads, same, relu2_a); };
  // Depth 8, fp32 on AVX-512.
  int64_t C = 512, F = 2048;
  e.push_back({"d8 q/k/v forward", kF32, kAvx512, mk(N, C, C, false, true, 0.0f), "sgemm_nt_avx512"});
  e.push_back({"d8 attention out forward (+= x)", kF32, kAvx512, mk(N, C, C, false, true, 1.0f), "sgemm_nt_avx512"});
  e.push_back({"d8 MLP up forward", kF32, kAvx512, mk(N, F, C, false, true, 0.0f), "oneDNN sgemm"});
  e.push_back({"d8 MLP down forward, relu2(fc)", kF32Relu2, kAvx512, mk(N, C, F, false, true, 1.0f, 2, false, true),
               "sgemm_nt_avx512 (relu2 A)"});
  e.push_back({"d8 head forward", kF32, kAvx512, mk(R, V, C, false, true, 0.0f), "oneDNN sgemm"});
  e.push_back({"d8 q/k/v data gradient", kF32, kAvx512, mk(N, C, C, false, false, 1.0f), "sgemm_nn_avx512"});
  e.push_back({"d8 q/k/v weight gradient", kF32, kAvx512, mk(C, C, N, true, false, 1.0f), "oneDNN sgemm"});
  e.push_back({"d8 attention out data gradient", kF32, kAvx512, mk(N, C, C, false, false, 0.0f), "sgemm_nn_avx512"});
  e.push_back({"d8 MLP up data gradient", kF32, kAvx512, mk(N, C, F, false, false, 0.0f), "sgemm_nn_avx512"});
  e.push_back({"d8 MLP up weight gradient", kF32, kAvx512, mk(F, C, N, true, false, 0.0f), "sgemm_at_avx512"});
  e.push_back({"d8 MLP down data gradient", kF32, kAvx512, mk(N, F, C, false, false, 0.0f), "oneDNN sgemm"});
  e.push_back({"d8 MLP down weight gradient", kF32, kAvx512, mk(C, F, N, true, false, 0.0f), "oneDNN sgemm"});
  e.push_back({"d8 head data gradient", kF32, kAvx512, mk(R, C, V, false, false, 0.0f), "oneDNN sgemm"});
  e.push_back({"d8 head weight gradient", kF32, kAvx512, mk(V, C, R, true, false, 1.0f), "sgemm_at_avx512"});
  // Depth 6 and 4, fp32.
  C = 384, F = 1536;
  e.push_back({"d6 q/k/v forward", kF32, kAvx512, mk(N, C, C, false, true, 0.0f), "sgemm_nt_avx512"});
  e.push_back({"d6 MLP up weight gradient", kF32, kAvx512, mk(F, C, N, true, false, 0.0f), "oneDNN matmul"});
  e.push_back({"d6 MLP up data gradient", kF32, kAvx512, mk(N, C, F, false, false, 0.0f), "oneDNN sgemm"});
  e.push_back({"d6 head weight gradient", kF32, kAvx512, mk(V, C, R, true, false, 1.0f), "oneDNN matmul"});
  C = 256, F = 1024;
  e.push_back({"d4 MLP down forward on AVX2", kF32, kAvx2, mk(N, C, F, false, true, 1.0f), "oneDNN matmul"});
  e.push_back({"d4 MLP down forward", kF32, kAvx512, mk(N, C, F, false, true, 1.0f), "sgemm_nt_avx512"});
  e.push_back({"d4 MLP up forward on AVX2", kF32, kAvx2, mk(N, F, C, false, true, 0.0f), "oneDNN sgemm"});
  // Newton-Schulz in fp32: X X^T and P X on 512 x 2048 and 512 x 512.
  e.push_back({"NS 512x2048 Gram, 1 thread", kF32, kAvx512, mk(512, 512, 2048, false, true, 0.0f, 1, true),
               "gram_f32_avx512"});
  e.push_back({"NS 512x2048 Gram, 2 threads", kF32, kAvx512, mk(512, 512, 2048, false, true, 0.0f, 2, true),
               "oneDNN matmul, mirrored"});
  e.push_back({"NS 512x512 X X^T, 2 threads", kF32, kAvx512, mk(512, 512, 512, false, true, 0.0f, 2, true),
               "oneDNN sgemm"});
  e.push_back({"NS 512x512 Gram, 1 thread", kF32, kAvx512, mk(512, 512, 512, false, true, 0.0f, 1, true),
               "gram_f32_avx512"});
  e.push_back({"NS 512x2048 Gram on AVX2, 1 thread", kF32, kAvx2, mk(512, 512, 2048, false, true, 0.0f, 1, true),
               "oneDNN sgemm on the upper block rows, mirrored"});
  e.push_back({"NS 512x2048 Gram on AVX2, 2 threads", kF32, kAvx2, mk(512, 512, 2048, false, true, 0.0f, 2, true),
               "oneDNN matmul, mirrored"});
  e.push_back({"NS 512x2048 P X, 1 thread", kF32, kAvx512, mk(512, 2048, 512, false, false, 0.0f, 1),
               "sgemm_nn_avx512"});
  e.push_back({"NS 512x2048 P X, 2 threads", kF32, kAvx512, mk(512, 2048, 512, false, false, 0.0f, 2),
               "oneDNN sgemm"});
  // Depth 8, bf16 on AVX-512-BF16 without AMX.
  C = 512, F = 2048;
  e.push_back({"d8 bf16 q/k/v forward", kBf16, kAvx512Bf16, mk(N, C, C, false, true, 0.0f), "gemm_rows_f32_avx512"});
  e.push_back({"d8 bf16 MLP up forward, relu2(C)", kBf16OutRelu2, kAvx512Bf16, mk(N, F, C, false, true, 0.0f),
               "gemm_rows_bf16_avx512 (and relu2(C) or GELU(C))"});
  e.push_back({"d8 bf16 MLP down forward, relu2(fc)", kBf16Relu2, kAvx512Bf16,
               mk(N, C, F, false, true, 1.0f, 2, false, true), "relu2_fwd_bf16, then matmul_bf16_avx512"});
  e.push_back({"d8 bf16 MLP down weight gradient, relu2(fc)", kBf16Relu2, kAvx512Bf16,
               mk(C, F, N, true, false, 0.0f), "gemm_at_f32_avx512 (relu2 B)"});
  e.push_back({"d8 bf16 MLP down data gradient, relu2'", kBf16OutRelu2Bwd, kAvx512Bf16,
               mk(N, F, C, false, false, 0.0f), "gemm_rows_bf16_avx512 (relu2's or GELU's gradient)"});
  e.push_back({"d8 bf16 MLP up weight gradient", kBf16, kAvx512Bf16, mk(F, C, N, true, false, 1.0f),
               "gemm_at_f32_avx512"});
  e.push_back({"d8 bf16 q/k/v data gradient (fused)", kBf16, kAvx512Bf16, mk(N, C, 3 * C, false, false, 0.0f),
               "gemm_rows_f32_avx512"});
  e.push_back({"d8 bf16 head forward (packed)", kBf16PackedB, kAvx512Bf16, mk(R, V, C, false, false, 0.0f),
               "gemm_rows_f32_avx512 (packed panels)"});
  e.push_back({"d8 bf16 head weight gradient", kBf16, kAvx512Bf16, mk(V, C, R, true, false, 1.0f),
               "gemm_at_f32_avx512"});
  e.push_back({"bf16 NS 512x2048 Gram, 1 thread", kBf16, kAvx512Bf16, mk(512, 512, 2048, false, true, 0.0f, 1, true),
               "matmul_bf16_onednn"});
  e.push_back({"bf16 NS 512x2048 P X, bf16 C", kBf16Out, kAvx512Bf16, mk(512, 2048, 512, false, false, 0.0f, 1),
               "gemm_rows_bf16_avx512"});
  // bf16 with AMX.
  e.push_back({"d8 amx q/k/v forward", kBf16, kAmx, mk(N, C, C, false, true, 0.0f), "matmul_bf16_amx"});
  e.push_back({"d8 amx MLP up forward", kBf16Out, kAmx, mk(N, F, C, false, true, 0.0f), "matmul_bf16_amx (bf16 C)"});
  e.push_back({"d8 amx MLP down forward, relu2(fc)", kBf16Relu2, kAmx, mk(N, C, F, false, true, 1.0f, 2, false, true),
               "matmul_bf16_amx (relu2 operand)"});
  e.push_back({"d8 amx MLP up weight gradient", kBf16, kAmx, mk(F, C, N, true, false, 0.0f), "matmul_bf16_amx"});
  e.push_back({"d8 amx attention out weight gradient", kBf16, kAmx, mk(C, C, N, true, false, 0.0f),
               "matmul_bf16_amx"});
  e.push_back({"d8 amx head data gradient", kBf16, kAmx, mk(R, C, V, false, false, 0.0f), "matmul_bf16_amx"});
  e.push_back({"d8 amx head forward (packed)", kBf16PackedB, kAmx, mk(R, V, C, false, false, 0.0f),
               "matmul_bf16_amx (packed B)"});
  e.push_back({"d6 amx MLP up weight gradient", kBf16, kAmx, mk(1536, 384, N, true, false, 0.0f), "matmul_bf16_amx"});
  e.push_back({"d4 amx MLP up weight gradient", kBf16, kAmx, mk(1024, 256, N, true, false, 0.0f),
               "matmul_bf16_onednn"});
  e.push_back({"d4 amx attention out weight gradient", kBf16, kAmx, mk(256, 256, N, true, false, 0.0f),
               "matmul_bf16_onednn"});
  e.push_back({"amx NS 512x2048 Gram, 2 threads", kBf16, kAmx, mk(512, 512, 2048, false, true, 0.0f, 2, true),
               "matmul_bf16_onednn"});
  e.push_back({"amx NS 512x2048 P X, bf16 C, 1 thread", kBf16Out, kAmx, mk(512, 2048, 512, false, false, 0.0f, 1),
               "matmul_bf16_amx (bf16 C)"});
  e.push_back({"amx NS 512x2048 P X, bf16 C, 2 threads", kBf16Out, kAmx, mk(512, 2048, 512, false, false, 0.0f, 2),
               "matmul_bf16_out_onednn"});
  // The AVX2 floor's bf16.
  e.push_back({"d4 bf16 on AVX2", kBf16, kAvx2, mk(N, C, C, false, true, 0.0f), "widen to fp32, then matmul"});
  e.push_back({"d4 bf16 C on AVX2", kBf16Out, kAvx2, mk(N, F, C, false, true, 0.0f),
               "widen to fp32, matmul, round to bf16"});
  return e;
}

TEST(KernelGemmRoutes, TheModelsProductsTakeTheirRoutes) {
  for (const Expect& e : model_calls()) EXPECT_EQ(route(e.op, e.tier, e.call), e.kernel) << e.what;
}

TEST(KernelGemmRoutes, EveryWalkEndsWithARouteThatTakesEverything) {
  // The ops and tiers that have an entry point: a walk there never runs out of routes.
  const std::pair<GemmOp, Isa> walks[] = {
      {GemmOp::kF32, Isa::kAvx2},           {GemmOp::kF32, Isa::kAvx512},
      {GemmOp::kF32Relu2, Isa::kAvx512},    {GemmOp::kBf16, Isa::kAvx2},
      {GemmOp::kBf16, Isa::kAvx512Bf16},    {GemmOp::kBf16, Isa::kAmx},
      {GemmOp::kBf16Relu2, Isa::kAvx512Bf16}, {GemmOp::kBf16Relu2, Isa::kAmx},
      {GemmOp::kBf16Out, Isa::kAvx2},       {GemmOp::kBf16Out, Isa::kAvx512Bf16},
      {GemmOp::kBf16Out, Isa::kAmx},        {GemmOp::kBf16OutRelu2, Isa::kAvx512Bf16},
      {GemmOp::kBf16OutRelu2Bwd, Isa::kAvx512Bf16}, {GemmOp::kBf16PackedB, Isa::kAvx512Bf16},
      {GemmOp::kBf16PackedB, Isa::kAmx}};
  const cpu::GemmRouteList list = cpu::gemm_routes();
  for (const auto& [op, tier] : walks) {
    const cpu::GemmRoute* last = nullptr;
    for (int i = 0; i < list.count; ++i)
      if (list.routes[i].op == op && list.routes[i].isa <= tier) last = &list.routes[i];
    ASSERT_NE(last, nullptr) << cpu::gemm_op_name(op) << " " << cpu::isa_name(tier);
    const cpu::GemmPattern any{};
    EXPECT_TRUE(last->when == nullptr && last->kernel->takes == nullptr && last->pattern.ta == any.ta &&
                last->pattern.tb == any.tb && last->pattern.beta == any.beta && last->pattern.gram == any.gram &&
                last->pattern.relu2 == any.relu2)
        << cpu::gemm_op_name(op) << " " << cpu::isa_name(tier) << ": " << last->kernel->name;
  }
}

TEST(KernelGemmRoutes, TheTextListsEveryRoute) {
  const std::string text = cpu::gemm_routes_text();
  const cpu::GemmRouteList list = cpu::gemm_routes();
  ASSERT_GT(list.count, 20);
  std::vector<std::string> lines;
  for (size_t p = 0, q; (q = text.find('\n', p)) != std::string::npos; p = q + 1) lines.push_back(text.substr(p, q - p));
  // One line a route, in table order, after the header's column names.
  size_t first = 0;
  while (first < lines.size() && lines[first].rfind("op ", 0) != 0) ++first;
  ASSERT_EQ(lines.size(), first + 1 + size_t(list.count));
  for (int i = 0; i < list.count; ++i) {
    const cpu::GemmRoute& r = list.routes[i];
    const std::string& line = lines[first + 1 + size_t(i)];
    EXPECT_EQ(line.rfind(std::string(cpu::gemm_op_name(r.op)) + " ", 0), 0u) << line;
    for (const char* part : {cpu::isa_name(r.isa), r.condition, r.kernel->name, r.kernel->limits, r.why})
      EXPECT_NE(line.find(part), std::string::npos) << part << " in: " << line;
  }
  EXPECT_NE(text.find("Gram = "), std::string::npos);
  EXPECT_NE(text.find("tiles_gain(m, n, k, ta) = "), std::string::npos);
}

}  // namespace
}  // namespace nt
