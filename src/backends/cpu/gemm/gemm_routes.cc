// SPDX-License-Identifier: MIT
// The GEMM routes (gemm_routes.h): the kernels as the routes call them, the table, and its walk.
// Our GEMMs take the products where they beat oneDNN on this model's shapes, oneDNN the rest;
// each route's `why` names the measurement, docs/BENCHMARKS.md has the figures.
#include "backends/cpu/gemm/gemm_routes.h"

#include <algorithm>
#include <array>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "core/check.h"
#include "backends/cpu/mirror_upper.h"

namespace nt::cpu {

namespace {

// The call's operands as the op's types.
float* cf(const GemmCall& c) { return static_cast<float*>(c.c); }
const float* af(const GemmCall& c) { return static_cast<const float*>(c.a); }
const float* bf(const GemmCall& c) { return static_cast<const float*>(c.b); }
uint16_t* ch(const GemmCall& c) { return static_cast<uint16_t*>(c.c); }
const uint16_t* ah(const GemmCall& c) { return static_cast<const uint16_t*>(c.a); }
const uint16_t* bh(const GemmCall& c) { return static_cast<const uint16_t*>(c.b); }
bool add(const GemmCall& c) { return c.beta == 1.0f; }

// A predicate and its text from one expression over the call's m, n, k, ta and threads, so that
// the printed condition is the code that decides.
#define NT_GEMM_IF(expr)                                                 \
  +[](const GemmCall& call) {                                            \
    [[maybe_unused]] const int64_t m = call.m, n = call.n, k = call.k;   \
    [[maybe_unused]] const bool ta = call.ta;                            \
    [[maybe_unused]] const int threads = call.threads;                   \
    return bool(expr);                                                   \
  },                                                                     \
      #expr

// Our AMX GEMM packs all of op(B) a call, reused once per row of A: it gains with many rows, or
// with long reductions (the weight gradients from 512 x 512 up, the head's data gradient).
constexpr const char* kTilesGainText =
    "tiles_gain(m, n, k, ta) = ta && k >= 4096 ? min(m, n) >= 512 || m n >= 2^19 "
    ": m >= 1024 || (k >= 4096 && m >= 256 && n >= 256)";
bool tiles_gain(int64_t m, int64_t n, int64_t k, bool ta) {
  if (ta && k >= 4096) return (m < n ? m : n) >= 512 || m * n >= (int64_t(1) << 19);
  return m >= 1024 || (k >= 4096 && m >= 256 && n >= 256);
}

// Where a fused activation is not taken by a GEMM: the operand relu2_a names goes through relu2
// (the backend's own activation pass, the same values) into the calling thread's kScratchRelu2
// buffer, then the plain product's entry point.
template <class T>
bool relu2_then_matmul(const GemmCall& c, void (*relu2)(const ExecContext&, T*, const T*, int64_t),
                       void (*matmul)(const ExecContext&, float*, const T*, const T*, int64_t, int64_t, int64_t, bool,
                                      bool, float)) {
  const T* a = static_cast<const T*>(c.a);
  const T* b = static_cast<const T*>(c.b);
  const int64_t count = c.relu2_a ? c.m * c.k : c.k * c.n;
  T* act = static_cast<T*>(thread_scratch(*c.ctx, kScratchRelu2, size_t(count) * sizeof(T)));
  relu2(*c.ctx, act, c.relu2_a ? a : b, count);
  matmul(*c.ctx, cf(c), c.relu2_a ? act : a, c.relu2_a ? b : act, c.m, c.n, c.k, c.ta, c.tb, c.beta);
  return true;
}

bool takes_pairs(const GemmCall& c) { return c.m >= 1 && c.n >= 1 && c.k >= 2 && c.k % 2 == 0; }
constexpr const char* kPairsText = "m, n >= 1, k >= 2 even";
bool takes_amx(const GemmCall& c) { return c.m >= 1 && c.n >= 1 && c.k >= 1 && !(c.ta && c.tb); }
constexpr const char* kAmxText = "m, n, k >= 1, not A^T B^T";

// fp32.
constexpr GemmKernel kNothing{"none (C is empty)", nullptr, "", [](const GemmCall&) { return true; }};
constexpr GemmKernel kGramF32{"gram_f32_avx512", takes_pairs, kPairsText,
                              [](const GemmCall& c) { return gram_f32_avx512(*c.ctx, cf(c), af(c), c.m, c.k); }};
constexpr GemmKernel kSgemmNt{"sgemm_nt_avx512", takes_pairs, kPairsText, [](const GemmCall& c) {
                                return sgemm_nt_avx512(*c.ctx, cf(c), af(c), bf(c), c.m, c.n, c.k, add(c));
                              }};
constexpr GemmKernel kSgemmNtRelu2{"sgemm_nt_avx512 (relu2 A)", takes_pairs, kPairsText, [](const GemmCall& c) {
                                     return sgemm_nt_avx512(*c.ctx, cf(c), af(c), bf(c), c.m, c.n, c.k, add(c), true);
                                   }};
constexpr GemmKernel kSgemmNn{"sgemm_nn_avx512", takes_pairs, kPairsText, [](const GemmCall& c) {
                                return sgemm_nn_avx512(*c.ctx, cf(c), af(c), bf(c), c.m, c.n, c.k, add(c));
                              }};
constexpr GemmKernel kSgemmAt{"sgemm_at_avx512", takes_pairs, kPairsText, [](const GemmCall& c) {
                                return sgemm_at_avx512(*c.ctx, cf(c), af(c), bf(c), c.m, c.n, c.k, add(c));
                              }};
constexpr GemmKernel kOnednnMatmulGram{
    "oneDNN matmul, mirrored", nullptr, "", [](const GemmCall& c) {
      if (!matmul_f32_brgemm(*c.ctx, cf(c), c.n, af(c), bf(c), c.m, c.n, c.k, c.ta, c.tb, c.beta)) return false;
      cpu::mirror_upper_triangle(*c.ctx, cf(c), c.m);
      return true;
    }};
constexpr GemmKernel kOnednnSgemmGram{"oneDNN sgemm on the upper block rows, mirrored", nullptr, "",
                                      [](const GemmCall& c) {
                                        sgemm_upper_onednn(*c.ctx, cf(c), af(c), c.m, c.k);
                                        return true;
                                      }};
constexpr GemmKernel kOnednnMatmulF32{"oneDNN matmul", nullptr, "", [](const GemmCall& c) {
                                        return matmul_f32_brgemm(*c.ctx, cf(c), c.n, af(c), bf(c), c.m, c.n, c.k, c.ta,
                                                                 c.tb, c.beta);
                                      }};
constexpr GemmKernel kOnednnSgemm{"oneDNN sgemm", nullptr, "", [](const GemmCall& c) {
                                    sgemm_onednn(*c.ctx, cf(c), af(c), bf(c), c.m, c.n, c.k, c.ta, c.tb, c.beta);
                                    return true;
                                  }};
constexpr GemmKernel kRelu2ThenF32{"relu2_fwd, then matmul_avx512", nullptr, "", [](const GemmCall& c) {
                                     return relu2_then_matmul<float>(c, relu2_fwd, matmul_avx512);
                                   }};

// bf16 operands.
constexpr GemmKernel kAmxGemm{"matmul_bf16_amx", takes_amx, kAmxText, [](const GemmCall& c) {
                                return matmul_bf16_amx(*c.ctx, c.c, c.n, false, ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb,
                                                       c.beta);
                              }};
constexpr GemmKernel kAmxRelu2{"matmul_bf16_amx (relu2 operand)", takes_amx, kAmxText, [](const GemmCall& c) {
                                 return matmul_bf16_amx(*c.ctx, c.c, c.n, false, ah(c), bh(c), c.m, c.n, c.k, c.ta,
                                                        c.tb, c.beta, c.relu2_a ? Relu2Operand::kA : Relu2Operand::kB);
                               }};
constexpr GemmKernel kAmxOut{"matmul_bf16_amx (bf16 C)", takes_amx, kAmxText, [](const GemmCall& c) {
                               return matmul_bf16_amx(*c.ctx, c.c, c.n, true, ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb,
                                                      0.0f);
                             }};
constexpr GemmKernel kAmxPacked{"matmul_bf16_amx (packed B)", nullptr, "", [](const GemmCall& c) {
                                  return matmul_bf16_amx(*c.ctx, c.c, c.n, false, ah(c), nullptr, c.m, c.n, c.k, c.ta,
                                                         false, c.beta, Relu2Operand::kNone, bh(c));
                                }};
constexpr GemmKernel kScaleC{"C = beta C", nullptr, "", [](const GemmCall& c) {
                               float* out = cf(c);
                               for (int64_t i = 0; i < c.m * c.n; ++i) out[i] = c.beta == 0.0f ? 0.0f : c.beta * out[i];
                               return true;
                             }};
constexpr GemmKernel kOnednnBf16{"matmul_bf16_onednn", nullptr, "", [](const GemmCall& c) {
                                   matmul_bf16_onednn(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb, c.beta);
                                   return true;
                                 }};
constexpr GemmKernel kGemmAt{"gemm_at_f32_avx512", takes_pairs, kPairsText, [](const GemmCall& c) {
                               return gemm_at_f32_avx512(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, add(c));
                             }};
constexpr GemmKernel kGemmAtRelu2{"gemm_at_f32_avx512 (relu2 B)", takes_pairs, kPairsText, [](const GemmCall& c) {
                                    return gemm_at_f32_avx512(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, add(c), true,
                                                              c.gelu);
                                  }};
constexpr GemmKernel kGemmRowsF32{"gemm_rows_f32_avx512", takes_pairs, kPairsText, [](const GemmCall& c) {
                                    return gemm_rows_f32_avx512(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb,
                                                                add(c));
                                  }};
constexpr GemmKernel kRowsPacked{"gemm_rows_f32_avx512 (packed panels)", nullptr, "", [](const GemmCall& c) {
                                   gemm_rows_f32_packed_avx512(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, add(c));
                                   return true;
                                 }};
constexpr GemmKernel kOnednnUnpacked{
    "matmul_bf16_onednn on op(B) out of the packed form", nullptr, "", [](const GemmCall& c) {
      matmul_bf16_onednn_rows_packed(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.beta);
      return true;
    }};
constexpr GemmKernel kWiden{"widen to fp32, then matmul", nullptr, "", [](const GemmCall& c) {
                              widen_then_matmul(*c.ctx, cf(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb, c.beta);
                              return true;
                            }};
constexpr GemmKernel kRelu2ThenTiles{"relu2_fwd_bf16, then matmul_bf16_tiles", nullptr, "", [](const GemmCall& c) {
                                       return relu2_then_matmul<uint16_t>(c, relu2_fwd_bf16_avx512, matmul_bf16_tiles);
                                     }};
constexpr GemmKernel kRelu2ThenAvx512{"relu2_fwd_bf16, then matmul_bf16_avx512", nullptr, "", [](const GemmCall& c) {
                                        return relu2_then_matmul<uint16_t>(
                                            c, c.gelu ? gelu_fwd_bf16_avx512 : relu2_fwd_bf16_avx512, matmul_bf16_avx512);
                                      }};

// bf16 C.
constexpr GemmKernel kOnednnOut{"matmul_bf16_out_onednn", nullptr, "", [](const GemmCall& c) {
                                  matmul_bf16_out_onednn(*c.ctx, ch(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb);
                                  return true;
                                }};
constexpr GemmKernel kGemmRowsBf16{"gemm_rows_bf16_avx512", takes_pairs, kPairsText, [](const GemmCall& c) {
                                     return gemm_rows_bf16_avx512(*c.ctx, ch(c), nullptr, nullptr, ah(c), bh(c), c.m,
                                                                  c.n, c.k, c.ta, c.tb);
                                   }};
constexpr GemmKernel kGemmRowsRelu2{
    "gemm_rows_bf16_avx512 (and relu2(C) or GELU(C))", takes_pairs, kPairsText, [](const GemmCall& c) {
      return gemm_rows_bf16_avx512(*c.ctx, ch(c), c.act, nullptr, ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb, c.gelu);
    }};
constexpr GemmKernel kGemmRowsRelu2Bwd{
    "gemm_rows_bf16_avx512 (relu2's or GELU's gradient)", takes_pairs, kPairsText, [](const GemmCall& c) {
      return gemm_rows_bf16_avx512(*c.ctx, ch(c), nullptr, c.inp, ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb, c.gelu);
    }};
constexpr GemmKernel kOnednnOutRelu2{
    "matmul_bf16_out_onednn, then relu2_fwd_bf16 (gelu_fwd_bf16)", nullptr, "", [](const GemmCall& c) {
      matmul_bf16_out_onednn(*c.ctx, ch(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb);
      if (c.gelu) gelu_fwd_bf16_avx512(*c.ctx, c.act, ch(c), c.m * c.n);
      else relu2_fwd_bf16_avx512(*c.ctx, c.act, ch(c), c.m * c.n);
      return true;
    }};
constexpr GemmKernel kOnednnOutRelu2Bwd{
    "matmul_bf16_out_onednn into scratch, then relu2_bwd_bf16 (gelu_bwd_bf16)", nullptr, "", [](const GemmCall& c) {
      uint16_t* dout =
          static_cast<uint16_t*>(thread_scratch(*c.ctx, kScratchRelu2, size_t(c.m * c.n) * sizeof(uint16_t)));
      matmul_bf16_out_onednn(*c.ctx, dout, ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb);
      if (c.gelu) gelu_bwd_bf16_avx512(*c.ctx, ch(c), dout, c.inp, c.m * c.n);
      else relu2_bwd_bf16_avx512(*c.ctx, ch(c), dout, c.inp, c.m * c.n);
      return true;
    }};
constexpr GemmKernel kWidenOut{"widen to fp32, matmul, round to bf16", nullptr, "", [](const GemmCall& c) {
                                 widen_then_matmul_bf16_out(*c.ctx, ch(c), ah(c), bh(c), c.m, c.n, c.k, c.ta, c.tb);
                                 return true;
                               }};

using enum GemmOp;
using enum Isa;
constexpr GemmPattern kAny{};
constexpr GemmPattern kNt{Trans::kNo, Trans::kYes, Beta::kZeroOrOne};
constexpr GemmPattern kNn{Trans::kNo, Trans::kNo, Beta::kZeroOrOne};
constexpr GemmPattern kTn{Trans::kYes, Trans::kNo, Beta::kZeroOrOne};
constexpr GemmPattern kGram{.gram = Gram::kYes};

// The table: per op, in walk order, the higher tiers' routes first. A bf16 tier ends with a route
// that takes every call, so that its walk never reaches a lower tier's kernels; the AVX-512 fp32
// routes fall through to the floor's (matmul_avx512 ends in matmul's choice).
constexpr GemmRoute kRoutes[] = {
    // fp32: matmul_avx512 (tier kAvx512), matmul (kAvx2).
    {kF32, kAvx512, kGram, NT_GEMM_IF(threads == 1), &kGramF32,
     "Muon's matrices a thread each: Newton-Schulz's share of a depth-8 fp32 step 5-8 % smaller"},
    {kF32, kAvx512, kNn, NT_GEMM_IF(threads == 1 && m == k && n >= m), &kSgemmNn,
     "Newton-Schulz's P X on one thread (with the Gram route above)"},
    {kF32, kAvx512, kNt, NT_GEMM_IF(k >= n && m >= 2 * n), &kSgemmNt,
     "depth 8 forward 8192x512x512: 10.6 against 13.7 ms (oneDNN); c_fc's (n > k) 5 % slower, so not"},
    {kF32, kAvx512, kNn, NT_GEMM_IF(k >= n && m >= 8 * n && n >= 512), &kSgemmNn,
     "depth 8 data gradients 8192x512x2048: 44.1 against 47.3 ms; n 384 5 % slower, the head's 9 %"},
    {kF32, kAvx512, kTn, NT_GEMM_IF(m >= 2 * n && n >= 512), &kSgemmAt,
     "c_fc's weight gradient 2048x512x8192: its backward 7 % faster at depth 8; n < 512 4-5 % slower"},
    {kF32, kAvx2, kAny, NT_GEMM_IF(m == 0 || n == 0), &kNothing, "-"},
    {kF32, kAvx2, kGram, NT_GEMM_IF(threads > 1), &kOnednnMatmulGram,
     "long Gram products on 2 threads: 14-50 % faster than sgemm's block triangle (512x512x2048)"},
    {kF32, kAvx2, kGram, nullptr, "", &kOnednnSgemmGram,
     "one thread: the triangle 16-28 % faster than either whole product"},
    {kF32, kAvx2, {Trans::kNo, Trans::kYes}, NT_GEMM_IF(k > n), &kOnednnMatmulF32,
     "MLP down forward (k > n): 380-410 against sgemm's 290-330 GFLOP/s"},
    {kF32, kAvx2, {Trans::kYes, Trans::kNo}, NT_GEMM_IF(m >= 2 * n), &kOnednnMatmulF32,
     "weight gradients with m >= 2n: Xeon 240-265 against sgemm's 185-200 GFLOP/s; head's 11-13 %"},
    {kF32, kAvx2, kAny, nullptr, "", &kOnednnSgemm, "80-96 % of fp32 peak on the other shapes"},

    // fp32 with relu2 on an operand: matmul_relu2_avx512 (kAvx512).
    {kF32Relu2, kAvx512, {Trans::kNo, Trans::kYes, Beta::kZeroOrOne, Gram::kAny, Relu2::kA},
     NT_GEMM_IF(k >= n && m >= 2 * n), &kSgemmNtRelu2,
     "MLP down forward reads relu2(fc) as it copies A: no 67 MB activation pass a layer (depth 8)"},
    {kF32Relu2, kAvx512, kAny, nullptr, "", &kRelu2ThenF32, "-"},

    // bf16 operands, fp32 C: matmul_bf16_tiles (kAmx), matmul_bf16_avx512 (kAvx512Bf16),
    // matmul_bf16_widen (kAvx2).
    {kBf16, kAmx, {.gram = Gram::kNo}, NT_GEMM_IF(tiles_gain(m, n, k, ta)), &kAmxGemm,
     "linear layers over a batch, weight gradients, head's gradients: 15-45 % faster than oneDNN 2.x"},
    {kBf16, kAmx, kAny, nullptr, "", &kOnednnBf16, "few rows: packing op(B) costs more than oneDNN loses"},
    {kBf16, kAvx512Bf16, {Trans::kYes, Trans::kNo, Beta::kZeroOrOne, Gram::kNo}, nullptr, "", &kGemmAt,
     "weight gradients: c_fc's 2048x512x8192 41.4-41.9 against 43.3-43.7 ms (Zen 4)"},
    {kBf16, kAvx512Bf16, {Trans::kNo, Trans::kAny, Beta::kZeroOrOne, Gram::kNo}, nullptr, "", &kGemmRowsF32,
     "fp32 C 0-13 % faster: q k v forward 8192x1536x512 29.6 against 30.4 ms (Zen 4)"},
    {kBf16, kAvx512Bf16, kAny, nullptr, "", &kOnednnBf16, "-"},
    {kBf16, kAvx2, kAny, nullptr, "", &kWiden, "bf16 products are exact in fp32: the same GEMM"},

    // bf16 operands, relu2 on one: matmul_bf16_relu2_tiles (kAmx), matmul_bf16_relu2_avx512.
    {kBf16Relu2, kAmx, kAny, NT_GEMM_IF(tiles_gain(m, n, k, ta)), &kAmxRelu2,
     "as matmul_bf16_amx, and no activation pass"},
    {kBf16Relu2, kAmx, kAny, nullptr, "", &kRelu2ThenTiles, "-"},
    {kBf16Relu2, kAvx512Bf16, {Trans::kYes, Trans::kNo, Beta::kZeroOrOne, Gram::kAny, Relu2::kB}, nullptr, "",
     &kGemmAtRelu2, "MLP down weight gradient reads relu2(fc) as it packs: no recomputed activation"},
    {kBf16Relu2, kAvx512Bf16, kAny, nullptr, "", &kRelu2ThenAvx512, "-"},

    // bf16 C: matmul_bf16_out_tiles (kAmx), matmul_bf16_out_avx512 (kAvx512Bf16),
    // matmul_bf16_out_widen (kAvx2).
    {kBf16Out, kAmx, kAny, NT_GEMM_IF(tiles_gain(m, n, k, ta) || (threads == 1 && !ta && m >= 512 && n >= 2048)),
     &kAmxOut, "and Newton-Schulz's P X on one thread from 512x2048: 1.01 against 1.25 ms"},
    {kBf16Out, kAmx, kAny, nullptr, "", &kOnednnOut, "-"},
    {kBf16Out, kAvx512Bf16, {.ta = Trans::kNo}, nullptr, "", &kGemmRowsBf16,
     "C rounded in registers: 8192x2048x512 38.3-40.7 against 43.1-45.6 ms (Zen 4)"},
    {kBf16Out, kAvx512Bf16, kAny, nullptr, "", &kOnednnOut, "-"},
    {kBf16Out, kAvx2, kAny, nullptr, "", &kWidenOut, "bf16 products are exact in fp32: the same GEMM"},

    // bf16 C and relu2(C), and relu2's gradient: matmul_bf16_out_relu2{,_bwd}_avx512.
    {kBf16OutRelu2, kAvx512Bf16, {.ta = Trans::kNo}, nullptr, "", &kGemmRowsRelu2,
     "MLP up: the activation written from registers, no pass of its own"},
    {kBf16OutRelu2, kAvx512Bf16, kAny, nullptr, "", &kOnednnOutRelu2, "-"},
    {kBf16OutRelu2Bwd, kAvx512Bf16, {.ta = Trans::kNo}, nullptr, "", &kGemmRowsRelu2Bwd,
     "MLP down data gradient: relu2's backward applied from registers, no pass of its own"},
    {kBf16OutRelu2Bwd, kAvx512Bf16, kAny, nullptr, "", &kOnednnOutRelu2Bwd, "-"},

    // op(B) packed once: matmul_bf16_packed_b_tiles (kAmx), matmul_bf16_packed_b_avx512.
    {kBf16PackedB, kAvx512Bf16, kAny, NT_GEMM_IF(m == 0 || n == 0), &kNothing, "-"},
    {kBf16PackedB, kAmx, kAny, NT_GEMM_IF(k == 0), &kScaleC, "-"},
    {kBf16PackedB, kAmx, kAny, nullptr, "", &kAmxPacked, "the packing is paid once for every product"},
    {kBf16PackedB, kAvx512Bf16, kNn, NT_GEMM_IF(k % 2 == 0), &kRowsPacked,
     "the head's weights packed once a step for its two products a chunk"},
    {kBf16PackedB, kAvx512Bf16, kAny, nullptr, "", &kOnednnUnpacked, "-"},
};
#undef NT_GEMM_IF

// Each op's routes: [begin, end) in kRoutes.
struct Span {
  int begin = 0, end = 0;
};
constexpr std::array<Span, size_t(kCount)> spans() {
  std::array<Span, size_t(kCount)> s{};
  const int count = int(std::size(kRoutes));
  for (int i = 0; i < count; ++i) {
    Span& sp = s[size_t(kRoutes[i].op)];
    if (sp.begin == sp.end) sp.begin = i;
    sp.end = i + 1;
  }
  return s;
}
constexpr std::array<Span, size_t(kCount)> kSpans = spans();
constexpr bool grouped() {  // every op's routes are contiguous
  for (const Span& s : kSpans)
    for (int i = s.begin; i < s.end; ++i)
      if (kRoutes[i].op != kRoutes[s.begin].op) return false;
  return true;
}
static_assert(grouped(), "kRoutes groups its routes by op");

bool matches(const GemmPattern& p, const GemmCall& c) {
  if (p.ta != Trans::kAny && c.ta != (p.ta == Trans::kYes)) return false;
  if (p.tb != Trans::kAny && c.tb != (p.tb == Trans::kYes)) return false;
  if (p.beta == Beta::kZeroOrOne && c.beta != 0.0f && c.beta != 1.0f) return false;
  if (p.relu2 != Relu2::kAny && c.relu2_a != (p.relu2 == Relu2::kA)) return false;
  if (p.gram != Gram::kAny &&
      is_gram(c.a, c.b, c.ta, c.tb, c.m, c.n, c.k, c.beta, c.threads) != (p.gram == Gram::kYes))
    return false;
  return true;
}

// The walk: with Run, the first route that applies and whose kernel runs; else the first that
// applies.
template <bool Run>
const GemmRoute* walk(GemmOp op, Isa tier, const GemmCall& c) {
  const Span s = kSpans[size_t(op)];
  for (int i = s.begin; i < s.end; ++i) {
    const GemmRoute& r = kRoutes[i];
    if (r.isa > tier || !matches(r.pattern, c) || (r.when && !r.when(c)) || (r.kernel->takes && !r.kernel->takes(c)))
      continue;
    if (!Run || r.kernel->run(c)) return &r;
  }
  return nullptr;
}

}  // namespace

GemmRouteList gemm_routes() { return {kRoutes, int(std::size(kRoutes))}; }

const GemmRoute* gemm_route_for(GemmOp op, Isa tier, const GemmCall& call) { return walk<false>(op, tier, call); }

void gemm_dispatch(GemmOp op, Isa tier, const GemmCall& call) {
  NT_CHECK(call.ctx != nullptr, "a GEMM call without its context");
  NT_CHECK(walk<true>(op, tier, call) != nullptr, "no GEMM route for %s at %s (m=%ld n=%ld k=%ld)", gemm_op_name(op),
           isa_name(tier), long(call.m), long(call.n), long(call.k));
}

namespace {
const char* trans_text(Trans t, const char* no, const char* yes, const char* any) {
  return t == Trans::kNo ? no : t == Trans::kYes ? yes : any;
}

std::string pattern_text(const GemmPattern& p) {
  if (p.gram == Gram::kYes) return "Gram";
  std::string a = trans_text(p.ta, "A", "A^T", "op(A)"), b = trans_text(p.tb, "B", "B^T", "op(B)");
  if (p.relu2 == Relu2::kA) a = "relu2(" + a + ")";
  if (p.relu2 == Relu2::kB) b = "relu2(" + b + ")";
  std::string s = p.ta == Trans::kAny && p.tb == Trans::kAny && p.relu2 == Relu2::kAny ? "any" : a + " " + b;
  if (p.beta == Beta::kZeroOrOne) s += ", beta 0|1";
  if (p.gram == Gram::kNo) s += ", not Gram";
  return s;
}
}  // namespace

const char* gemm_op_name(GemmOp op) {
  switch (op) {
    case kF32: return "f32";
    case kF32Relu2: return "f32_relu2";
    case kBf16: return "bf16";
    case kBf16Relu2: return "bf16_relu2";
    case kBf16Out: return "bf16_out";
    case kBf16OutRelu2: return "bf16_out_relu2";
    case kBf16OutRelu2Bwd: return "bf16_out_relu2_bwd";
    case kBf16PackedB: return "bf16_packed_b";
    case kCount: break;
  }
  return "?";
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case kAvx2: return "avx2";
    case kAvx512: return "avx512";
    case kAvx512Bf16: return "avx512bf16";
    case kAmx: return "amx";
  }
  return "?";
}

std::string gemm_routes_text() {
  std::vector<std::array<std::string, 6>> rows = {{"op", "isa", "pattern", "condition", "kernel [takes]", "why"}};
  for (const GemmRoute& r : kRoutes) {
    std::string kernel = r.kernel->name;
    if (*r.kernel->limits) kernel += std::string(" [") + r.kernel->limits + "]";
    rows.push_back({gemm_op_name(r.op), isa_name(r.isa), pattern_text(r.pattern), *r.condition ? r.condition : "-",
                    kernel, r.why});
  }
  std::array<size_t, 6> width{};
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string s =
      "GEMM routes, per op in walk order. An entry point walks at its kernel table's tier (avx2 < avx512 <\n"
      "avx512bf16 < amx), over the routes of that tier and below, and runs the first whose pattern and\n"
      "condition hold and whose kernel takes the call.\n"
      "  Gram = a == b, A B^T, m == n, beta 0, m >= 128, (k >= 2m or threads == 1)\n"
      "  ";
  s += kTilesGainText;
  s += "\n\n";
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    s += line + "\n";
  }
  return s;
}

}  // namespace nt::cpu
