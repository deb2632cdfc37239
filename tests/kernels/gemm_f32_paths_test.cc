// SPDX-License-Identifier: MIT
// The CPU backend's fp32 GEMMs and register tiles, called directly on the paths the table-level
// tests do not reach, and the GEMMs' work sharing; each reports itself SKIPPED where this
// process cannot run its instruction set.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <string>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/steal_ranges.h"
#include "backends/ref/ops_ref.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::gemm_shape;
using test::randn;
using test::rel_err;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;


// C (m, n) = A B (+ C0 when acc) in double, B packed in pairs along k as the attention tiles read
// it (bp[kk ldb + 2 j + e] = B(2 kk + e, j)); elements read through get.
template <class T, class Get>
Vec pair_gemm_ref(const std::vector<T>& a, int64_t lda, const std::vector<T>& b, int64_t ldb, const std::vector<float>& c0,
                  int64_t ldc, int64_t m, int64_t n, int64_t k2, bool acc, Get get) {
  Vec want(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = acc ? double(c0[size_t(i * ldc + j)]) : 0.0;
      for (int64_t kk = 0; kk < k2; ++kk)
        for (int64_t e = 0; e < 2; ++e) sum += get(a[size_t(i * lda + 2 * kk + e)]) * get(b[size_t(kk * ldb + 2 * j + e)]);
      want[size_t(i * n + j)] = sum;
    }
  return want;
}

// The (m, n) result in a C of row stride ldc, after checking that the columns past n kept c0's
// values.
Vec strided_result(const std::vector<float>& c, const std::vector<float>& c0, int64_t m, int64_t n, int64_t ldc) {
  Vec got(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) got[size_t(i * n + j)] = c[size_t(i * ldc + j)];
    for (int64_t j = n; j < ldc; ++j) EXPECT_EQ(c[size_t(i * ldc + j)], c0[size_t(i * ldc + j)]) << i << ", " << j;
  }
  return got;
}


// The register-tile bf16 GEMM of the bf16 attention: exact bf16 products accumulated in fp32,
// against double, with strided operands, row and column tails and both accumulate modes; the
// columns past n of a strided C stay untouched. Each variant (the AMX one
// on whole 16 x 16 x 32 tiles with every kind of remainder: rows, columns, pairs).
void check_vnni_tile(const char* name, cpu::GemmVnniBf16 fn) {
  struct Shape { int64_t m, n, k2; };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 33, 5}, Shape{8, 32, 32}, Shape{13, 70, 17}, Shape{64, 64, 32},
                  Shape{3, 100, 64}, Shape{17, 15, 3}, Shape{16, 16, 16}, Shape{48, 80, 40}, Shape{100, 130, 70},
                  Shape{32, 48, 15}})
    for (bool acc : {false, true}) {
      const int64_t lda = 2 * s.k2 + 2, ldb = 2 * s.n + 4, ldc = s.n + 3;
      auto af = to_f32(randn(s.m * lda, 91)), bf = to_f32(randn(s.k2 * ldb, 92)), cf = to_f32(randn(s.m * ldc, 93));
      std::vector<uint16_t> a(af.size()), b(bf.size());
      ref::to_bf16(a.data(), af.data(), int64_t(af.size()));
      ref::to_bf16(b.data(), bf.data(), int64_t(bf.size()));
      const Vec want = pair_gemm_ref(a, lda, b, ldb, cf, ldc, s.m, s.n, s.k2, acc,
                                     [](uint16_t h) { return double(ref::from_bf16_1(h)); });
      std::vector<float> c = cf;
      fn(c.data(), ldc, a.data(), lda, b.data(), ldb, s.m, s.n, s.k2, acc);
      EXPECT_LT(rel_err(strided_result(c, cf, s.m, s.n, ldc), want), 1e-6)
          << name << " " << s.m << "x" << s.n << "x" << s.k2 << " acc " << acc;
    }
}

TEST(KernelParity, GemmVnniBf16Tile) { check_vnni_tile("portable", cpu::gemm_vnni_bf16_portable); }
TEST(KernelParity, GemmVnniBf16TileAvx512Bf16) {
  NT_NEEDS(CpuIsa::kAvx512Bf16);
  check_vnni_tile("avx512bf16", cpu::gemm_vnni_bf16_avx512);
}
TEST(KernelParity, GemmVnniBf16TileAmx) {
  NT_NEEDS(CpuIsa::kAmx);
  check_vnni_tile("amx", cpu::gemm_vnni_bf16_amx);
}

// The fp32 register tile of the fp32 attention on AVX-512 (B in pairs along k, as the bf16 tile
// reads it), against double: strided operands, row and column tails, both accumulate modes; the
// columns past n of a strided C stay untouched.
TEST(KernelParity, GemmPairsF32Tile) {
  NT_NEEDS(CpuIsa::kAvx512);
  struct Shape { int64_t m, n, k2; };
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 33, 5}, Shape{6, 32, 32}, Shape{13, 70, 17}, Shape{64, 64, 32},
                  Shape{3, 100, 64}, Shape{17, 15, 3}, Shape{5, 9, 2}})
    for (bool acc : {false, true}) {
      const int64_t lda = 2 * s.k2 + 2, ldb = 2 * s.n + 4, ldc = s.n + 3;
      auto a = to_f32(randn(s.m * lda, 94)), b = to_f32(randn(s.k2 * ldb, 95)), cf = to_f32(randn(s.m * ldc, 96));
      const Vec want = pair_gemm_ref(a, lda, b, ldb, cf, ldc, s.m, s.n, s.k2, acc, [](float x) { return double(x); });
      std::vector<float> c = cf;
      cpu::gemm_pairs_f32_avx512(c.data(), ldc, a.data(), lda, b.data(), ldb, s.m, s.n, s.k2, acc);
      EXPECT_LT(rel_err(strided_result(c, cf, s.m, s.n, ldc), want), 1e-6) << s.m << "x" << s.n << "x" << s.k2 << " acc " << acc;
    }
}

// Our fp32 GEMMs (the table's fp32 matmul takes them on AVX-512 where matmul_cpu.cc says),
// against double, C += and C =, a misaligned C, a column tail. C = A B^T (sgemm_nt_avx512) and
// C = A B (sgemm_nn_avx512): a row tail inside a 96-row block and inside a 6-row tile, k in
// several passes of 128 pair-rows with a tail of the 8 x 8 packing transpose, the panels split
// into parts for the threads (few row blocks) and for L3 (over 4 MiB packed), k = 2, a shape
// smaller than one tile, C wider than tall. The Gram product (gram_f32_avx512): exactly
// symmetric, one element, a row tail inside the diagonal's tiles, long k. C = A^T B
// (sgemm_at_avx512): k in blocks of unequal length (C carried from one to the next), with B
// packed whole and block by block (over 4 MiB packed), short blocks where B is wide, a row tail
// inside a tile and inside a 48-row group, C wider than tall, fewer tiles than threads. What all
// decline (k odd): C left untouched.
TEST(KernelParity, SgemmNtNnAtAndGram) {
  NT_NEEDS(CpuIsa::kAvx512);
  // 't': A B^T, 'n': A B, 'a': A^T B, 'g': the Gram product A A^T (n = m; add and the offset of C
  // as for the others, though the kernel always sets C).
  struct Case { char form; int64_t m, n, k; bool add; int64_t c_offset; };
  for (const Case& cs : {Case{'t', 1037, 70, 602, false, 0}, Case{'t', 1037, 70, 602, true, 1},
                         Case{'t', 100, 33, 2, false, 0}, Case{'t', 300, 1100, 1000, true, 0},
                         Case{'t', 7, 9, 18, true, 1}, Case{'t', 200, 64, 64, false, 0},
                         Case{'n', 1037, 70, 602, false, 0}, Case{'n', 1037, 70, 602, true, 1},
                         Case{'n', 100, 33, 2, false, 0}, Case{'n', 300, 1100, 1000, true, 0},
                         Case{'n', 7, 9, 18, true, 1}, Case{'n', 160, 700, 160, false, 0},
                         Case{'a', 301, 70, 6002, true, 0}, Case{'a', 301, 70, 6002, false, 1},
                         Case{'a', 1037, 40, 34, false, 0}, Case{'a', 72, 33, 2, true, 1},
                         Case{'a', 70, 301, 602, true, 0}, Case{'a', 5, 40, 100, false, 0},
                         Case{'a', 600, 2100, 130, true, 0}, Case{'a', 100, 600, 2000, true, 1},
                         Case{'g', 1, 1, 2, false, 0}, Case{'g', 200, 200, 64, false, 1},
                         Case{'g', 333, 333, 1300, false, 0}, Case{'g', 97, 97, 2, false, 1}}) {
    const std::string what = std::string(1, cs.form) + " " + gemm_shape(cs.m, cs.n, cs.k) + " add " +
                             std::to_string(cs.add) + " C offset " + std::to_string(cs.c_offset);
    const Vec a = randn(cs.m * cs.k, 98), b = randn(cs.n * cs.k, 99), c0 = randn(cs.m * cs.n, 100);
    Vec want = c0;
    const Vec& bw = cs.form == 'g' ? a : b;
    const bool ta = cs.form == 'a', tb = cs.form == 't' || cs.form == 'g';
    ref::matmul<double>(want.data(), a.data(), bw.data(), cs.m, cs.n, cs.k, ta, tb, cs.add ? 1.0 : 0.0);
    const auto af = to_f32(a), bf = to_f32(b), c0f = to_f32(c0);
    std::vector<float> c(size_t(cs.m * cs.n + cs.c_offset + 1), 7.0f);
    std::copy(c0f.begin(), c0f.end(), c.begin() + cs.c_offset);
    float* const cc = c.data() + cs.c_offset;
    bool ran = false;
    switch (cs.form) {
      case 't':
        ran = cpu::sgemm_nt_avx512(test_ctx(), cc, af.data(), bf.data(), cs.m, cs.n, cs.k, cs.add);
        break;
      case 'n':
        ran = cpu::sgemm_nn_avx512(test_ctx(), cc, af.data(), bf.data(), cs.m, cs.n, cs.k, cs.add);
        break;
      case 'a':
        ran = cpu::sgemm_at_avx512(test_ctx(), cc, af.data(), bf.data(), cs.m, cs.n, cs.k, cs.add);
        break;
      default:
        ran = cpu::gram_f32_avx512(test_ctx(), cc, af.data(), cs.m, cs.k);
        break;
    }
    ASSERT_TRUE(ran) << what;
    EXPECT_LT(rel_err(to_f64(cc, want.size()), want), 20 * std::sqrt(double(cs.k)) * 6e-8) << what;
    if (cs.form == 'g') {
      for (int64_t i = 0; i < cs.m; ++i)
        for (int64_t j = 0; j < i; ++j) ASSERT_EQ(cc[i * cs.m + j], cc[j * cs.m + i]) << what << ": not symmetric";
    }
    if (cs.c_offset) {
      EXPECT_EQ(c[0], 7.0f) << what << ": wrote before C";
    }
    EXPECT_EQ(c[c.size() - 1], 7.0f) << what << ": wrote past C";
  }
  std::vector<float> a(96 * 63, 1.0f), c(96 * 32, 3.0f);
  EXPECT_FALSE(cpu::sgemm_nt_avx512(test_ctx(), c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::sgemm_nn_avx512(test_ctx(), c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::sgemm_at_avx512(test_ctx(), c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::gram_f32_avx512(test_ctx(), c.data(), a.data(), 32, 63));
  EXPECT_EQ(c, std::vector<float>(96 * 32, 3.0f));
}

// The GEMMs' work sharing (steal_ranges.h): a thread takes its own range front to back, then
// the others' units from their backs; every unit goes to exactly one thread.
TEST(StealRanges, OwnRangeFirstThenTheOthersBacks) {
  cpu::StealRanges r(10, 2);  // thread 0 owns 0 .. 4, thread 1 5 .. 9
  std::vector<int64_t> got;
  for (int64_t u; (u = r.next(0)) >= 0;) got.push_back(u);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 4, 9, 8, 7, 6, 5}));
  EXPECT_EQ(r.next(1), -1);
  cpu::StealRanges s(7, 3);  // 0 .. 1, 2 .. 3, 4 .. 6
  EXPECT_EQ(s.next(1), 2);
  EXPECT_EQ(s.next(2), 4);
  EXPECT_EQ(s.next(1), 3);
  EXPECT_EQ(s.next(1), 6);  // its own range done: the next thread's back
  EXPECT_EQ(s.next(0), 0);
}


TEST(StealRanges, EveryUnitOnceInAnyTeam) {
  for (int64_t count : {0, 1, 2, 7, 100, 1001})
    for (int ranges : {1, 2, 3, 8})
      for (int team : {1, 2, 3}) {  // a team smaller than the ranges leaves some ranges to thieves
        cpu::StealRanges r(count, ranges);
        std::vector<int> seen(size_t(count), 0);
        std::vector<int> in_order(size_t(team), 1);
#pragma omp parallel num_threads(team)
        {
          const int t = omp_get_thread_num();
          const int64_t lo = count * t / ranges, hi = t < ranges ? count * (t + 1) / ranges : lo;
          int64_t last = lo - 1;
          for (int64_t u; (u = r.next(t)) >= 0;) {
#pragma omp atomic
            ++seen[size_t(u)];
            if (u >= lo && u < hi) {  // its own units come front to back
              if (u != last + 1) in_order[size_t(t)] = 0;
              last = u;
            }
          }
        }
        for (int64_t u = 0; u < count; ++u) ASSERT_EQ(seen[size_t(u)], 1) << count << " " << ranges << " " << team;
        for (int t = 0; t < team; ++t) EXPECT_EQ(in_order[size_t(t)], 1) << count << " " << ranges << " " << team;
      }
}

}  // namespace
}  // namespace nt
