// SPDX-License-Identifier: MIT
// The fp32 GEMMs of every CPU kernel table against the reference in double: every transpose and
// beta on awkward shapes and on the shapes the dispatch rules send to kernels of their own; the
// Gram product's exact symmetry; the product reading the MLP's activation; the symmetric
// product of Newton-Schulz's Gram chain.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <string>

#include "backends/cpu/cpu_ops.h"
#include "backends/ref/ops_ref.h"
#include "kernels/kernel_cases.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::gemm_shape;
using cases::MatmulCase;
using test::randn;
using test::rel_err;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;

// cs on kt against double, within 20 sqrt(k) fp32 roundings.
void check_matmul(const KernelTable& kt, const MatmulCase& cs) {
  const int64_t M = cs.m, N = cs.n, K = cs.k;
  const int threads = omp_get_max_threads();
  for (double beta : cs.betas) {
    Vec a = randn(M * K, 20), b = cs.gram ? a : randn(K * N, 21), c0 = randn(M * N, 22);
    Vec cref = c0;
    ref::matmul<double>(cref.data(), a.data(), b.data(), M, N, K, cs.ta, cs.tb, beta);
    auto af = to_f32(a), bf = to_f32(b), cf = to_f32(c0);
    if (cs.threads) omp_set_num_threads(cs.threads);
    kt.matmul(test_ctx(), cf.data(), af.data(), cs.gram ? af.data() : bf.data(), M, N, K, cs.ta, cs.tb, float(beta));
    omp_set_num_threads(threads);
    EXPECT_LT(rel_err(to_f64(cf.data(), cf.size()), cref), 20 * std::sqrt(double(K)) * 6e-8)
        << kt.name << " " << cs.name() << " beta=" << beta;
  }
}

class KernelMatmul : public test::TableCaseTest<MatmulCase> {};
TEST_P(KernelMatmul, AllTransposes) { check_matmul(kt(), tc()); }
NT_TABLE_CASE_TESTS(Matmul, KernelMatmul, cases::matmul_cases());

// NT_TEST_MATMUL_SHAPES="m,n,k;..." of the caller's choice, every transpose and beta, on every
// table this process can run (README, "Tests").
TEST(KernelMatmulEnv, AllTransposesOnEnvShapes) {
  const auto shapes = test::env_shapes<3>("NT_TEST_MATMUL_SHAPES");
  if (shapes.empty()) GTEST_SKIP() << "NT_TEST_MATMUL_SHAPES is not set";
  test::for_each_runnable_table([&](const KernelTable& kt) {
    for (auto [m, n, k] : shapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) check_matmul(kt, {m, n, k, ta, tb, {0.0, 1.0, 0.5}});
  });
}

class KernelMatmulF32 : public test::TableTest {};


TEST_P(KernelMatmulF32, MatmulGramIsSymmetricAndExact) {
  // X X^T takes the Gram path from 128 rows up when the product is at least twice as long as X
  // is tall, or on one thread (Muon's matrices side by side) at any length: in fp32 the whole
  // product through the matmul primitive (threaded) or sgemm's upper block triangle (one
  // thread); in bf16 the upper block triangle. Then mirrored, so the result is exactly symmetric.
  const int saved = omp_get_max_threads();
  for (int threads : {2, 1})
    for (int64_t m : {int64_t(128), int64_t(203), int64_t(256)})
      for (int64_t k : {2 * m + 3, m + 5}) {
        omp_set_num_threads(threads);
        const bool gram = k >= 2 * m || threads == 1;
        const std::string what = std::to_string(threads) + " threads, " + std::to_string(m) + " x " + std::to_string(k);
        Vec x = randn(m * k, 90);
        Vec want(static_cast<size_t>(m * m));
        ref::matmul<double>(want.data(), x.data(), x.data(), m, m, k, false, true, 0.0);
        auto xf = to_f32(x);
        std::vector<float> got(static_cast<size_t>(m * m), 5.0f);
        kt().matmul(test_ctx(), got.data(), xf.data(), xf.data(), m, m, k, false, true, 0.0f);
        EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what;
        for (int64_t i = 0; gram && i < m; ++i)
          for (int64_t j = 0; j < i; ++j) ASSERT_EQ(got[size_t(i * m + j)], got[size_t(j * m + i)]) << what;
        // The bf16 GEMM: exact against the widened operands, symmetric on the Gram path.
        std::vector<uint16_t> xh(xf.size());
        ref::to_bf16(xh.data(), xf.data(), int64_t(xf.size()));
        Vec want_h(static_cast<size_t>(m * m));
        ref::matmul_bf16<double>(want_h.data(), xh.data(), xh.data(), m, m, k, false, true, 0.0);
        std::fill(got.begin(), got.end(), 5.0f);
        kt().matmul_bf16(test_ctx(), got.data(), xh.data(), xh.data(), m, m, k, false, true, 0.0f);
        EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want_h), 1e-5) << "bf16, " << what;
        for (int64_t i = 0; gram && i < m; ++i)
          for (int64_t j = 0; j < i; ++j) ASSERT_EQ(got[size_t(i * m + j)], got[size_t(j * m + i)]) << "bf16, " << what;
      }
  omp_set_num_threads(saved);
}

// The fp32 product with the MLP's activation applied to one operand as it is read (where the
// backend has it): against double on the activation written out, every transpose, either operand,
// beta 0, 1 and 0.5, k odd; and bit for bit against our fp32 GEMM on the activation written out
// where that GEMM takes the product (the down product's pattern, A B^T with k >= n and m >= 2 n:
// a row tail inside the last row block, several row blocks, C += and C =).
TEST_P(KernelMatmulF32, MatmulRelu2ReadsTheActivation) {
  const KernelTable& k = kt();
  if (!k.matmul_relu2) GTEST_SKIP() << "the " << k.name << " backend has no fused matmul_relu2";
  struct Case { int64_t m, n, k; bool ta, tb, relu2_a; float beta; };
  std::vector<Case> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool relu2_a : {false, true}) cases.push_back({37, 19, 45, ta, tb, relu2_a, 0.5f});
  for (float beta : {0.0f, 1.0f}) {
    cases.push_back({301, 40, 130, false, true, true, beta});  // the down product's pattern
    cases.push_back({200, 64, 1024, false, true, true, beta});
    cases.push_back({301, 40, 131, false, true, true, beta});  // k odd: composed
  }
  for (const Case& cs : cases) {
    const std::string what = gemm_shape(cs.m, cs.n, cs.k) + " ta " + std::to_string(cs.ta) + " tb " +
                             std::to_string(cs.tb) + (cs.relu2_a ? " relu2(A)" : " relu2(B)") + " beta " +
                             std::to_string(cs.beta);
    const auto a = to_f32(randn(cs.m * cs.k, 91)), b = to_f32(randn(cs.k * cs.n, 92));
    const auto& x = cs.relu2_a ? a : b;
    std::vector<float> act(x.size());
    ref::relu2_fwd<float>(act.data(), x.data(), int64_t(act.size()));
    const float *ea = cs.relu2_a ? act.data() : a.data(), *eb = cs.relu2_a ? b.data() : act.data();
    const auto c0 = to_f32(randn(cs.m * cs.n, 93));
    std::vector<float> got = c0;
    k.matmul_relu2(test_ctx(), got.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta, cs.relu2_a);
    Vec want(c0.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = cs.beta * double(c0[i]);
    const Vec da = to_f64(ea, size_t(cs.m * cs.k)), db = to_f64(eb, size_t(cs.k * cs.n));
    ref::matmul<double>(want.data(), da.data(), db.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
    EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what;
    if (isa() >= CpuIsa::kAvx512 && cs.relu2_a && !cs.ta && cs.tb && cs.k % 2 == 0 && cs.beta != 0.5f &&
        cs.k >= cs.n && cs.m >= 2 * cs.n) {
      std::vector<float> ours = c0;
      ASSERT_TRUE(cpu::sgemm_nt_avx512(test_ctx(), ours.data(), ea, eb, cs.m, cs.n, cs.k, cs.beta == 1.0f)) << what;
      EXPECT_EQ(got, ours) << what;
    }
  }
}

// The backend's symmetric product of commuting symmetric matrices (Newton-Schulz's Gram chain)
// against the product in double: a = G, b = p(G) for a random symmetric G. Exactly symmetric,
// the same on all threads and on one, and sizes it does not take left alone.
TEST_P(KernelMatmulF32, SymmetricProductF32) {
  if (!kt().symmetric_product_f32) GTEST_SKIP() << "the " << kt().name << " backend composes the symmetric product";
  const int saved = omp_get_max_threads();
  for (int64_t m : {32, 64, 96, 160, 256}) {
    Vec g = randn(m * m, 99), p(static_cast<size_t>(m * m)), want(static_cast<size_t>(m * m));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < i; ++j) g[size_t(i * m + j)] = g[size_t(j * m + i)];
    for (int64_t i = 0; i < m; ++i)  // p = 0.5 I + 0.3 G + 0.1 G G: commutes with G
      for (int64_t j = 0; j < m; ++j) {
        double gg = 0;
        for (int64_t e = 0; e < m; ++e) gg += g[size_t(i * m + e)] * g[size_t(e * m + j)];
        p[size_t(i * m + j)] = (i == j ? 0.5 : 0.0) + 0.3 * g[size_t(i * m + j)] + 0.1 * gg;
      }
    const std::vector<float> a = to_f32(g), b = to_f32(p);
    Vec af(a.begin(), a.end()), bf(b.begin(), b.end());  // the fp32 inputs, exactly
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double sum = 0;
        for (int64_t e = 0; e < m; ++e) sum += af[size_t(i * m + e)] * bf[size_t(e * m + j)];
        want[size_t(i * m + j)] = sum;
      }
    std::vector<float> got[2];
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      got[threads - 1].assign(size_t(m * m) + 1, 7.f);
      ASSERT_TRUE(kt().symmetric_product_f32(test_ctx(), got[threads - 1].data(), a.data(), b.data(), m)) << "m " << m;
    }
    omp_set_num_threads(saved);
    EXPECT_EQ(got[0], got[1]) << "m " << m << ": one thread and two differ";
    EXPECT_EQ(got[0].back(), 7.f) << "wrote past the end: m " << m;
    got[0].pop_back();
    EXPECT_LT(rel_err(to_f64(got[0].data(), got[0].size()), want), 1e-6) << "m " << m;
    bool symmetric = true;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < i; ++j) symmetric = symmetric && got[0][size_t(i * m + j)] == got[0][size_t(j * m + i)];
    EXPECT_TRUE(symmetric) << "m " << m;
  }
  for (int64_t m : {1, 31, 40, 100}) {
    std::vector<float> a(size_t(m * m), 1.f), c(size_t(m * m), 3.f);
    EXPECT_FALSE(kt().symmetric_product_f32(test_ctx(), c.data(), a.data(), a.data(), m)) << "m " << m;
    EXPECT_EQ(c, std::vector<float>(size_t(m * m), 3.f)) << "m " << m;
  }
}

NT_TABLE_TESTS(KernelMatmulF32);

}  // namespace
}  // namespace nt
