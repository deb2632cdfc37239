// SPDX-License-Identifier: MIT
// The CPU backend's own bf16 GEMMs, called directly on the paths the table-level tests do not
// reach (streaming stores, long reductions, misaligned operands, what they decline); each
// reports itself SKIPPED where this process cannot run its instruction set.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_ops.h"
#include "backends/ref/ops_ref.h"
#include "core/buffer.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::gemm_shape;
using test::randn;
using test::randn_bf16;
using test::rel_err;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;


// What our AVX-512-BF16 bf16-output GEMM declines (A transposed, k odd), it leaves untouched.
TEST(KernelParity, GemmRowsBf16Declines) {
  NT_NEEDS(CpuIsa::kAvx512Bf16);
  std::vector<uint16_t> a(64 * 64, 0x3f80), c(64 * 64, 0x1234);
  EXPECT_FALSE(
      cpu::gemm_rows_bf16_avx512(test_ctx(), c.data(), nullptr, nullptr, a.data(), a.data(), 64, 64, 64, true, false));
  EXPECT_FALSE(
      cpu::gemm_rows_bf16_avx512(test_ctx(), c.data(), nullptr, nullptr, a.data(), a.data(), 64, 64, 63, false, false));
  EXPECT_EQ(c, std::vector<uint16_t>(64 * 64, 0x1234));
}

// Our fp32-output GEMM on the AVX-512-BF16 tile (matmul_bf16 with beta 0 or 1 where the CPU has
// it, no AMX) on the paths the shapes above do not reach: a C of 8 MiB and more written with
// streaming stores (aligned), the same C misaligned (plain stores), a row tail and a column tail
// at that size, and C += with C's lines fetched ahead; a long k summed in blocks (the last one
// short), with C = and C +=, where the units run along row blocks and along groups of panels
// (more columns than rows); against the double product of the same bf16 operands.
TEST(KernelParity, MatmulBf16OurF32GemmPaths) {
  NT_NEEDS(CpuIsa::kAvx512Bf16);
  struct Case { int64_t m, n, k; bool tb; int64_t c_offset; bool add; };
  for (const Case& cs : {Case{1040, 2048, 64, true, 0, false}, Case{1040, 2048, 64, false, 1, false},
                         Case{1037, 2056, 34, false, 0, false}, Case{1037, 2056, 34, true, 1, true},
                         Case{300, 70, 4162, false, 0, false}, Case{40, 1100, 4400, true, 1, true},
                         Case{72, 2100, 300, true, 0, false}}) {
    const std::string what =
        gemm_shape(cs.m, cs.n, cs.k) + " tb " + std::to_string(cs.tb) + " C offset " + std::to_string(cs.c_offset);
    const Buffer<uint16_t> a = randn_bf16(cs.m * cs.k, 94), b = randn_bf16(cs.k * cs.n, 95);
    Buffer<float> c(size_t(cs.m * cs.n + cs.c_offset));
    for (size_t i = 0; i < c.size(); ++i) c[i] = 7.0f;
    ASSERT_TRUE(cpu::gemm_rows_f32_avx512(test_ctx(), c.data() + cs.c_offset, a.data(), b.data(), cs.m, cs.n, cs.k,
                                          false, cs.tb, cs.add));
    Vec want(size_t(cs.m * cs.n), 7.0);
    ref::matmul_bf16<double>(want.data(), a.data(), b.data(), cs.m, cs.n, cs.k, false, cs.tb, cs.add ? 1.0 : 0.0);
    EXPECT_LT(rel_err(to_f64(c.data() + cs.c_offset, want.size()), want), 1e-5) << what;
    if (cs.c_offset) {
      EXPECT_EQ(c[0], 7.0f) << what << ": wrote before C";
    }
  }
}

// Our GEMM for A^T B on the AVX-512-BF16 tile (matmul_bf16 with A transposed, beta 0 or 1: the
// weight gradients), against the double product of the same bf16 operands. C taller than wide
// or square (the product straight into C): k in several blocks of unequal length (C carried from
// one to the next), a row tail inside the last group of 32 rows and a column tail, C += and C =,
// a misaligned C, k shorter than a pair-row slice per tile, one group per thread. C wider than
// tall (C^T into scratch, then transposed into C): the same, plus a thread whose rows of C^T end
// inside a 16 x 16 block of the transpose, and C's rows inside one. With B read through the MLP's
// activation (relu2_b: packed from the pre-activation), bit for bit the product on the
// activation written out by relu2_fwd_bf16. What it declines (k odd): C left untouched.
TEST(KernelParity, MatmulBf16OurAtGemm) {
  NT_NEEDS(CpuIsa::kAvx512Bf16);
  struct Case { int64_t m, n, k; bool add; int64_t c_offset; };
  for (const Case& cs : {Case{301, 70, 6002, true, 0}, Case{301, 70, 6002, false, 1}, Case{1037, 40, 34, false, 0},
                         Case{72, 33, 2, true, 1}, Case{256, 32, 4100, false, 0}, Case{64, 20, 130, true, 0},
                         Case{64, 64, 130, true, 0}, Case{96, 90, 600, false, 1}, Case{70, 301, 6002, true, 0},
                         Case{70, 301, 6002, false, 1}, Case{40, 1037, 34, false, 0}, Case{33, 72, 2, true, 1},
                         Case{20, 72, 130, true, 0}, Case{256, 1024, 1000, false, 0}}) {
    const std::string what =
        gemm_shape(cs.m, cs.n, cs.k) + " add " + std::to_string(cs.add) + " C offset " + std::to_string(cs.c_offset);
    const Buffer<uint16_t> a = randn_bf16(cs.k * cs.m, 96), b = randn_bf16(cs.k * cs.n, 97);
    Buffer<float> c(size_t(cs.m * cs.n + cs.c_offset + 1));
    for (size_t i = 0; i < c.size(); ++i) c[i] = 7.0f;
    ASSERT_TRUE(
        cpu::gemm_at_f32_avx512(test_ctx(), c.data() + cs.c_offset, a.data(), b.data(), cs.m, cs.n, cs.k, cs.add))
        << what;
    Vec want(size_t(cs.m * cs.n), 7.0);
    ref::matmul_bf16<double>(want.data(), a.data(), b.data(), cs.m, cs.n, cs.k, true, false, cs.add ? 1.0 : 0.0);
    EXPECT_LT(rel_err(to_f64(c.data() + cs.c_offset, want.size()), want), 1e-5) << what;
    if (cs.c_offset) {
      EXPECT_EQ(c[0], 7.0f) << what << ": wrote before C";
    }
    EXPECT_EQ(c[c.size() - 1], 7.0f) << what << ": wrote past C";
    Buffer<uint16_t> act(b.size());
    ref::relu2_fwd_bf16(act.data(), b.data(), int64_t(act.size()));
    std::vector<float> fused(size_t(cs.m * cs.n), 7.0f), composed = fused;
    ASSERT_TRUE(cpu::gemm_at_f32_avx512(test_ctx(), fused.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.add, true))
        << what;
    ASSERT_TRUE(cpu::gemm_at_f32_avx512(test_ctx(), composed.data(), a.data(), act.data(), cs.m, cs.n, cs.k, cs.add))
        << what;
    EXPECT_EQ(fused, composed) << what << " relu2(B)";
  }
  std::vector<uint16_t> a(96 * 64, 0x3f80);
  std::vector<float> c(96 * 64, 3.0f);
  EXPECT_FALSE(cpu::gemm_at_f32_avx512(test_ctx(), c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::gemm_at_f32_avx512(test_ctx(), c.data(), a.data(), a.data(), 32, 96, 63, false));
  EXPECT_EQ(c, std::vector<float>(96 * 64, 3.0f));
}

// The whole-GEMM AMX kernel (where this CPU has AMX) on each of its paths, against the double
// product of the same bf16 operands: A read in place (64-byte aligned rows of whole 32-k steps)
// or packed (a row tail, a k tail, misaligned operands, A^T B with m > n and m <= n, and from
// rows of A long enough that X is packed whole per chunk by both threads),
// reductions past one chunk (2048 with A packed, 4096 in place) added into C, beta 0, 1 and
// 0.5, bf16 C, a row stride past n (whose columns must stay untouched), C's streaming stores
// (8 MiB and more; a bf16 C staged two column blocks wide, with an odd count of them), and
// one or two threads.
TEST(KernelParity, MatmulBf16AmxPaths) {
  NT_NEEDS(CpuIsa::kAmx);
  struct Case { int64_t m, n, k, ldc; bool ta, tb, bf16_out, misaligned; float beta; };
  const Case cases[] = {
      {160, 96, 64, 96, false, true, false, false, 0.0f},      // A in place, B^T
      {160, 96, 64, 96, false, false, false, false, 1.0f},     // A in place, B, C +=
      {128, 288, 64, 288, false, true, false, false, 1.0f},    // C += through the tiles, 4 + 4 + 1 wide
      {150, 70, 45, 80, false, false, false, false, 0.5f},     // tails, beta 0.5, ldc > n
      {96, 64, 96, 64, false, true, false, true, 0.0f},        // misaligned operands: packed
      {200, 48, 4200, 48, true, false, false, false, 1.0f},   // A^T B, m > n, three chunks
      {40, 130, 4200, 130, true, false, false, false, 0.0f},  // A^T B, m <= n, three chunks
      {2070, 40, 2100, 40, true, false, false, false, 1.0f},  // A^T B, A's rows 4 KiB+: X packed whole
      {64, 96, 4160, 96, false, false, false, false, 1.0f},    // A in place, two chunks
      {96, 200, 96, 200, false, true, true, false, 0.0f},      // bf16 C
      {70, 33, 2100, 33, false, false, true, false, 0.0f},     // bf16 C, one chunk of 2112
      {2048, 2048, 32, 2048, false, true, false, false, 0.0f},  // fp32 C of 16 MiB: streamed
      {1024, 2048, 32, 2048, false, true, false, false, 0.0f},  // fp32 C of 8 MiB: streamed
      {2048, 2056, 32, 2056, false, true, false, false, 0.5f},  // the same size, beta 0.5, odd blocks
      {2048, 2048, 600, 2048, false, true, false, false, 1.0f}, // C += through the tiles, 16 MiB
      {4096, 2048, 32, 2048, false, false, true, false, 0.0f},  // bf16 C of 16 MiB: streamed
      {4096, 2112, 32, 2112, false, true, true, false, 0.0f},   // streamed bf16 C, odd column blocks
      {130, 100, 64, 120, false, true, true, false, 0.0f},      // bf16 C, ldc > n, odd column blocks
  };
  const int saved = omp_get_max_threads();
  for (int threads : {2, 1})
    for (const Case& cs : cases) {
      if (threads == 1 && cs.m * cs.n > 1 << 20) continue;  // the big ones once
      omp_set_num_threads(threads);
      const std::string what = std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k) +
                               " ta " + std::to_string(cs.ta) + " tb " + std::to_string(cs.tb) + " bf16 C " +
                               std::to_string(cs.bf16_out) + " beta " + std::to_string(cs.beta) + ", " +
                               std::to_string(threads) + " threads";
      const int64_t off = cs.misaligned ? 1 : 0;  // elements: one bf16 off the 64-byte line
      Buffer<uint16_t> ah(size_t(cs.m * cs.k + off)), bh(size_t(cs.k * cs.n + off));
      {
        const auto af = to_f32(randn(cs.m * cs.k, 85)), bf = to_f32(randn(cs.k * cs.n, 86));
        ref::to_bf16(ah.data() + off, af.data(), cs.m * cs.k);
        ref::to_bf16(bh.data() + off, bf.data(), cs.k * cs.n);
      }
      const auto c0 = to_f32(randn(cs.m * cs.ldc, 87));
      Vec want(size_t(cs.m * cs.n));
      for (int64_t i = 0; i < cs.m; ++i)
        for (int64_t j = 0; j < cs.n; ++j) want[size_t(i * cs.n + j)] = cs.beta * double(c0[size_t(i * cs.ldc + j)]);
      ref::matmul_bf16<double>(want.data(), ah.data() + off, bh.data() + off, cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
      Vec got(want.size());
      if (cs.bf16_out) {
        Buffer<uint16_t> c(size_t(cs.m * cs.ldc));
        std::fill_n(c.data(), c.size(), uint16_t(0x7fc1));  // a NaN: columns past n must keep it
        ASSERT_TRUE(cpu::matmul_bf16_amx(test_ctx(), c.data(), cs.ldc, true, ah.data() + off, bh.data() + off, cs.m,
                                         cs.n, cs.k, cs.ta, cs.tb, 0.0f));
        for (int64_t i = 0; i < cs.m; ++i) {
          for (int64_t j = 0; j < cs.n; ++j) got[size_t(i * cs.n + j)] = ref::from_bf16_1(c[size_t(i * cs.ldc + j)]);
          for (int64_t j = cs.n; j < cs.ldc; ++j) ASSERT_EQ(c[size_t(i * cs.ldc + j)], 0x7fc1) << what;
        }
        EXPECT_LT(rel_err(got, want), 4e-3) << what;  // one bf16 rounding
      } else {
        Buffer<float> c(size_t(cs.m * cs.ldc));
        std::memcpy(c.data(), c0.data(), c0.size() * sizeof(float));
        ASSERT_TRUE(cpu::matmul_bf16_amx(test_ctx(), c.data(), cs.ldc, false, ah.data() + off, bh.data() + off, cs.m,
                                         cs.n, cs.k, cs.ta, cs.tb, cs.beta));
        for (int64_t i = 0; i < cs.m; ++i) {
          for (int64_t j = 0; j < cs.n; ++j) got[size_t(i * cs.n + j)] = c[size_t(i * cs.ldc + j)];
          for (int64_t j = cs.n; j < cs.ldc; ++j) ASSERT_EQ(c[size_t(i * cs.ldc + j)], c0[size_t(i * cs.ldc + j)]) << what;
        }
        EXPECT_LT(rel_err(got, want), 1e-5) << what;
      }
    }
  omp_set_num_threads(saved);
  // Both operands transposed is not taken: the caller goes to oneDNN.
  Buffer<uint16_t> x(64 * 64);
  Buffer<float> c(64 * 64);
  EXPECT_FALSE(cpu::matmul_bf16_amx(test_ctx(), c.data(), 64, false, x.data(), x.data(), 64, 64, 64, true, true, 0.0f));
}

}  // namespace
}  // namespace nt
