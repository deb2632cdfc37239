// SPDX-License-Identifier: MIT
// The elementwise and data-movement kernels of every CPU kernel table: the bf16 conversions and
// the bf16 MLP activation bit for bit against the scalar spec, the transpose exactly, the
// optimizer's kernels against the reference in double; and the mirror of symmetric products.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "backends/ref/ops_ref.h"
#include "kernel_test_util.h"
#include "backends/cpu/mirror_upper.h"

namespace nt {
namespace {

using test::randn;
using test::rel_err;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;

class KernelElementwise : public test::TableTest {};

// ---------------------------------------------------------------- bf16 (mixed precision)

TEST_P(KernelElementwise, ToBf16RoundsToNearestEven) {
  // Ties in both directions, carries into the exponent, signs, infinities, NaN; odd length for
  // the vector tails. (Subnormals are left out: the AVX-512-BF16 instruction flushes them.)
  std::vector<float> x = {1.0f, -1.0f, 0.0f, -0.0f, 65504.0f, 3.14159265f, -2.71828f, 1e30f, -1e-30f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  const uint32_t bits[] = {0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x3f807fffu, 0x7f7fffffu, 0xbf7f8000u};
  for (uint32_t b : bits) {
    float f;
    std::memcpy(&f, &b, 4);
    x.push_back(f);
  }
  Vec r = randn(40, 70, 100.0);
  for (double v : r) x.push_back(float(v));
  for (int64_t n : {int64_t(x.size()), int64_t(17), int64_t(1)}) {
    std::vector<uint16_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 0xdead), c(static_cast<size_t>(n));
    ref::to_bf16(a.data(), x.data(), n);
    kt().to_bf16(test_ctx(), b.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a[size_t(i)], b[size_t(i)]) << i << " " << x[size_t(i)];
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  uint16_t h = 0;
  kt().to_bf16(test_ctx(), &h, &nan, 1);
  EXPECT_TRUE(std::isnan(ref::from_bf16_1(h)));
}

// The fp32 MLP activation against the reference, on lengths that leave every vector tail (and the
// threaded split) something to do.
TEST_P(KernelElementwise, Relu2MatchesTheReference) {
  const KernelTable& k = kt();
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(9), int64_t(17), int64_t(45), int64_t(100003)}) {
    const std::vector<float> x = to_f32(randn(size_t(n), 73)), dy = to_f32(randn(size_t(n), 74));
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), -7.0f);
    ref::relu2_fwd<float>(want.data(), x.data(), n);
    k.relu2_fwd(test_ctx(), got.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(want[size_t(i)], got[size_t(i)]) << "fwd " << n << " " << i;
    ref::relu2_bwd<float>(want.data(), dy.data(), x.data(), n);
    k.relu2_bwd(test_ctx(), got.data(), dy.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(want[size_t(i)], got[size_t(i)]) << "bwd " << n << " " << i;
  }
}

// The bf16 MLP activation (bf16 pre-activation and gradient in, bf16 out) against the scalar
// spec, bit for bit, on signed zeros, values whose square overflows, infinities, NaN and random
// values; short odd lengths and one long enough for the threaded path.
TEST_P(KernelElementwise, Relu2Bf16MatchesTheSpec) {
  std::vector<float> x = {1.0f, -1.0f, 0.0f, -0.0f, 3.14159265f, -2.71828f, 1e30f, -1e-30f, 1e20f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  for (double v : randn(100003, 72)) x.push_back(float(v));
  std::vector<uint16_t> xh(x.size()), dyh(x.size());
  ref::to_bf16(xh.data(), x.data(), int64_t(x.size()));
  std::vector<float> dy(x.rbegin(), x.rend());
  for (float& v : dy) v = std::isfinite(v) ? v * 1e-3f : 1.0f;
  ref::to_bf16(dyh.data(), dy.data(), int64_t(dy.size()));
  const KernelTable& k = kt();
  for (int64_t n : {int64_t(x.size()), int64_t(45), int64_t(17), int64_t(1)}) {
    std::vector<uint16_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), 0xdead);
    ref::relu2_fwd_bf16(want.data(), xh.data(), n);
    k.relu2_fwd_bf16(test_ctx(), got.data(), xh.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want[size_t(i)], got[size_t(i)]) << "fwd " << i << " " << x[size_t(i)];
    ref::relu2_bwd_bf16(want.data(), dyh.data(), xh.data(), n);
    k.relu2_bwd_bf16(test_ctx(), got.data(), dyh.data(), xh.data(), n);
    for (int64_t i = 0; i < n; ++i) {  // as values: a zero gradient may come out as -0
      const float w = ref::from_bf16_1(want[size_t(i)]), g = ref::from_bf16_1(got[size_t(i)]);
      if (std::isnan(w)) ASSERT_TRUE(std::isnan(g)) << "bwd " << i;
      else ASSERT_EQ(w, g) << "bwd " << i << " " << x[size_t(i)];
    }
  }
}

// The spec itself, on values it must get right: relu(x)^2 and 2 relu(x) dy, each rounded once.
TEST(KernelRelu2Bf16Spec, ExactOnSmallValues) {
  const uint16_t three = 0x4040, minus_two = 0xc000, half = 0x3f00;  // 3, -2, 0.5
  uint16_t out = 0;
  ref::relu2_fwd_bf16(&out, &three, 1);
  EXPECT_EQ(ref::from_bf16_1(out), 9.0f);
  ref::relu2_fwd_bf16(&out, &minus_two, 1);
  EXPECT_EQ(ref::from_bf16_1(out), 0.0f);
  ref::relu2_bwd_bf16(&out, &half, &three, 1);
  EXPECT_EQ(ref::from_bf16_1(out), 3.0f);
  ref::relu2_bwd_bf16(&out, &half, &minus_two, 1);
  EXPECT_EQ(ref::from_bf16_1(out), 0.0f);
}

// A large array goes through the threaded path.
TEST_P(KernelElementwise, ToBf16ThreadedPath) {
  Vec big = randn(100003, 71);
  auto bf = to_f32(big);
  std::vector<uint16_t> a(bf.size()), b(bf.size());
  ref::to_bf16(a.data(), bf.data(), int64_t(bf.size()));
  kt().to_bf16(test_ctx(), b.data(), bf.data(), int64_t(bf.size()));
  EXPECT_EQ(a, b);
}

// The strided conversion writes each row at its offset and leaves the columns between untouched.
TEST_P(KernelElementwise, ToBf16Rows) {
  const int64_t rows = 37, cols = 45, ld = 50;
  auto x = to_f32(randn(rows * cols, 95));
  std::vector<uint16_t> want(size_t(rows * ld), 0x1234);
  ref::to_bf16_rows(want.data(), ld, x.data(), rows, cols);
  std::vector<uint16_t> got(size_t(rows * ld), 0x1234);
  kt().to_bf16_rows(test_ctx(), got.data(), ld, x.data(), rows, cols);
  EXPECT_EQ(got, want);
}

// The transpose of Muon's tall matrices: exact, on shapes with and without whole 8 x 8 blocks
// and 64-column tasks, on one thread (as Muon's side-by-side lists run it) and on all.
TEST_P(KernelElementwise, Transpose) {
  const int saved = omp_get_max_threads();
  for (int threads : {saved, 1}) {
    omp_set_num_threads(threads);
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {1, 9}, {9, 1}, {7, 13}, {8, 8}, {16, 64}, {65, 130},
                              {129, 70}, {300, 77}}) {
      const std::vector<float> src = to_f32(randn(rows * cols, 97));
      std::vector<float> want(src.size()), got(src.size() + 1, 7.f);
      ref::transpose(want.data(), src.data(), rows, cols);
      kt().transpose(test_ctx(), got.data(), src.data(), rows, cols);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << rows << "x" << cols << " threads " << threads;
      EXPECT_EQ(got.back(), 7.f) << "wrote past the end: " << rows << "x" << cols;
    }
  }
  omp_set_num_threads(saved);
}

// The optimizer's elementwise kernels: AdamW, axpby, sum of squares, Nesterov momentum.
TEST_P(KernelElementwise, OptimizerElementwise) {
  const int64_t n = 777;
  Vec p = randn(n, 63), gr = randn(n, 64), m = randn(n, 65, 0.1), v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::abs(randn(1, 100 + uint64_t(i))[0]) * 0.01;
  auto pf = to_f32(p), gf = to_f32(gr), mf = to_f32(m), vf = to_f32(v);
  ref::adamw_step<double>(p.data(), gr.data(), m.data(), v.data(), n, 0.01, 0.8, 0.95, 1e-10, 0.1, 0.2, 0.05);
  kt().adamw_step(test_ctx(), pf.data(), gf.data(), mf.data(), vf.data(), n, 0.01f, 0.8f, 0.95f, 1e-10f, 0.1f, 0.2f,
                  0.05f);
  EXPECT_LT(rel_err(to_f64(pf.data(), static_cast<size_t>(n)), p), 1e-6);
  EXPECT_LT(rel_err(to_f64(mf.data(), static_cast<size_t>(n)), m), 1e-6);
  EXPECT_LT(rel_err(to_f64(vf.data(), static_cast<size_t>(n)), v), 1e-6);
  ref::axpby<double>(p.data(), gr.data(), n, 0.3, -1.5);
  kt().axpby(test_ctx(), pf.data(), gf.data(), n, 0.3f, -1.5f);
  EXPECT_LT(rel_err(to_f64(pf.data(), static_cast<size_t>(n)), p), 1e-6);
  EXPECT_NEAR(kt().sum_squares(test_ctx(), pf.data(), n) / ref::sum_squares<double>(p.data(), n), 1.0, 1e-6);
  Vec u(static_cast<size_t>(n));
  std::vector<float> uf(static_cast<size_t>(n));
  ref::nesterov<double>(u.data(), m.data(), gr.data(), n, 0.95);
  kt().nesterov(test_ctx(), uf.data(), mf.data(), gf.data(), n, 0.95f);
  EXPECT_LT(rel_err(to_f64(mf.data(), static_cast<size_t>(n)), m), 1e-6);
  EXPECT_LT(rel_err(to_f64(uf.data(), static_cast<size_t>(n)), u), 1e-6);
}

NT_TABLE_TESTS(KernelElementwise);

// The mirror of symmetric products: below the diagonal becomes exactly the upper triangle's
// transpose, the upper triangle and the diagonal stay; sizes around the 32-row blocks and the
// 8 x 8 register blocks, on all threads and on one: the portable mirror (composed/) and the CPU
// backend's.
TEST(KernelParity, MirrorUpperTriangle) {
  const int saved = omp_get_max_threads();
  for (auto* mirror_upper_triangle : {&nt::mirror_upper_triangle, &nt::cpu::mirror_upper_triangle})
  for (int threads : {saved, 1}) {
    omp_set_num_threads(threads);
    for (int64_t m : {1, 2, 7, 9, 31, 32, 33, 64, 100, 257}) {
      const std::vector<float> src = to_f32(randn(m * m, 98));
      std::vector<float> got(src.size() + 1, 7.f);
      std::copy(src.begin(), src.end(), got.begin());
      mirror_upper_triangle(test_ctx(), got.data(), m);
      bool ok = true;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j)
          ok = ok && got[size_t(i * m + j)] == src[size_t(std::min(i, j) * m + std::max(i, j))];
      EXPECT_TRUE(ok) << "m " << m << " threads " << threads;
      EXPECT_EQ(got.back(), 7.f) << "wrote past the end: m " << m;
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace nt
