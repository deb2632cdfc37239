// SPDX-License-Identifier: MIT
// The bf16 GEMMs of every CPU kernel table against the reference in double on the same bf16
// operands: fp32 and bf16 C, every transpose and beta; the fused activation epilogues, the B
// operand packed once, and the product reading the MLP's activation, where a table has them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_ops.h"
#include "backends/ref/ops_ref.h"
#include "core/buffer.h"
#include "kernels/kernel_cases.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::gemm_shape;
using cases::MatmulCase;
using test::randn;
using test::randn_bf16;
using test::rel_err;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;

// matmul_bf16 against the double product of the same bf16 operands, and within bf16 rounding
// of the fp32 product of the unrounded ones.
void check_matmul_bf16(const KernelTable& kt, const MatmulCase& s) {
  const bool ta = s.ta, tb = s.tb;
  for (double beta_d : s.betas) {
    const float beta = float(beta_d);
    Vec a = randn(s.m * s.k, 80), b = randn(s.k * s.n, 81), c0 = randn(s.m * s.n, 82);
    auto af = to_f32(a), bf = to_f32(b);
    const std::vector<uint16_t> ah = test::bf16_of(af), bh = test::bf16_of(bf);
    Vec want = c0;
    ref::matmul_bf16<double>(want.data(), ah.data(), bh.data(), s.m, s.n, s.k, ta, tb, double(beta));
    auto got = to_f32(c0);
    kt.matmul_bf16(test_ctx(), got.data(), ah.data(), bh.data(), s.m, s.n, s.k, ta, tb, beta);
    EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << kt.name << " " << s.name() << " beta " << beta;
    // And the bf16 GEMM stays within bf16 rounding of the fp32 one.
    Vec exact = c0;
    ref::matmul<double>(exact.data(), a.data(), b.data(), s.m, s.n, s.k, ta, tb, double(beta));
    EXPECT_LT(rel_err(to_f64(got.data(), got.size()), exact), 2e-2) << kt.name << " " << s.name() << " beta " << beta;
  }
}

// The bf16-output GEMM: the exact product rounded once to bf16, so within half a bf16 ulp
// (2^-8 relative) plus the fp32 accumulation's error.
void check_matmul_bf16_out(const KernelTable& kt, const MatmulCase& s) {
  auto af = to_f32(randn(s.m * s.k, 83)), bf = to_f32(randn(s.k * s.n, 84));
  const std::vector<uint16_t> ah = test::bf16_of(af), bh = test::bf16_of(bf);
  std::vector<uint16_t> got(size_t(s.m * s.n));
  Vec want(size_t(s.m * s.n));
  ref::matmul_bf16<double>(want.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0);
  kt.matmul_bf16_out(test_ctx(), got.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  EXPECT_EQ(test::bf16_misses(got.data(), want, 1e-5, scale), 0) << kt.name << " " << s.name();
}

class KernelMatmulBf16 : public test::TableCaseTest<MatmulCase> {};
TEST_P(KernelMatmulBf16, AllTransposes) { check_matmul_bf16(kt(), tc()); }
NT_TABLE_CASE_TESTS(MatmulBf16, KernelMatmulBf16, cases::matmul_bf16_cases());

class KernelMatmulBf16Out : public test::TableCaseTest<MatmulCase> {};
TEST_P(KernelMatmulBf16Out, AllTransposes) { check_matmul_bf16_out(kt(), tc()); }
NT_TABLE_CASE_TESTS(MatmulBf16Out, KernelMatmulBf16Out, cases::matmul_bf16_out_cases());

// NT_TEST_MATMUL_SHAPES="m,n,k;..." of the caller's choice on every table this process runs.
TEST(KernelMatmulBf16Env, AllTransposesOnEnvShapes) {
  const auto shapes = test::env_shapes<3>("NT_TEST_MATMUL_SHAPES");
  if (shapes.empty()) GTEST_SKIP() << "NT_TEST_MATMUL_SHAPES is not set";
  test::for_each_runnable_table([&](const KernelTable& kt) {
    for (auto [m, n, k] : shapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          check_matmul_bf16(kt, {m, n, k, ta, tb, {0.0, 1.0}});
          check_matmul_bf16_out(kt, {m, n, k, ta, tb, {0.0}});
        }
  });
}

class KernelMatmulBf16Fused : public test::TableTest {};

// The bf16-output GEMM with the MLP's activation in its epilogue (KernelTable's optional
// matmul_bf16_out_relu2 and matmul_bf16_out_relu2_bwd, and the GELU pair, where the backend has
// them): the product within bf16 rounding of the double one, and the activation, forward or
// backward, exactly relu2_fwd_bf16 / relu2_bwd_bf16 (gelu_fwd_bf16 / gelu_bwd_bf16) of the product
// as matmul_bf16_out rounds it (the same GEMM).
// Shapes for our AVX-512-BF16 GEMM's paths (row tails, a column tail, one row block split by
// columns, several blocks a thread) and for those it declines (A transposed, k odd: composed).
TEST_P(KernelMatmulBf16Fused, MatmulBf16OutWithTheActivation) {
  const KernelTable& k = kt();
  if (!k.matmul_bf16_out_relu2 || !k.matmul_bf16_out_relu2_bwd)
    GTEST_SKIP() << "the " << k.name << " backend has no fused bf16 GEMM + activation";
  struct Case { int64_t m, n, k; bool ta, tb; };
  std::vector<Case> cases;
  for (bool tb : {false, true})
    for (Case c : {Case{37, 64, 46, false, false}, Case{130, 96, 258, false, false}, Case{5, 300, 64, false, false},
                   Case{200, 33, 2, false, false}, Case{16, 1024, 64, false, false}, Case{520, 320, 96, false, false},
                   Case{41, 70, 45, false, false}, Case{64, 96, 64, true, false}})
      cases.push_back({c.m, c.n, c.k, c.ta, tb});
  for (const Case& cs : cases) {
    const std::string what = std::to_string(cs.m) + "x" + std::to_string(cs.n) + "x" + std::to_string(cs.k) +
                             " ta " + std::to_string(cs.ta) + " tb " + std::to_string(cs.tb);
    const auto mn = size_t(cs.m * cs.n);
    std::vector<uint16_t> a(size_t(cs.m * cs.k)), b(size_t(cs.k * cs.n)), x(mn);
    {
      const auto af = to_f32(randn(cs.m * cs.k, 91)), bf = to_f32(randn(cs.k * cs.n, 92));
      const auto xf = to_f32(randn(cs.m * cs.n, 93));
      ref::to_bf16(a.data(), af.data(), int64_t(a.size()));
      ref::to_bf16(b.data(), bf.data(), int64_t(b.size()));
      ref::to_bf16(x.data(), xf.data(), int64_t(x.size()));
    }
    Vec exact(mn);
    ref::matmul_bf16<double>(exact.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, 0.0);
    double scale = 0;
    for (double e : exact) scale = std::max(scale, std::abs(e));
    std::vector<uint16_t> plain(mn, 0x1234), c(mn, 0x1234), act(mn, 0x1234), want(mn), dinp(mn, 0x1234);
    k.matmul_bf16_out(test_ctx(), plain.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    int bad = 0;
    for (size_t i = 0; i < mn; ++i)
      bad += std::abs(ref::from_bf16_1(plain[i]) - exact[i]) > std::ldexp(std::abs(exact[i]), -8) + 1e-5 * scale;
    EXPECT_EQ(bad, 0) << what;
    // Forward: C as matmul_bf16_out writes it, and its activation.
    k.matmul_bf16_out_relu2(test_ctx(), c.data(), act.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(c, plain) << what;
    ref::relu2_fwd_bf16(want.data(), plain.data(), int64_t(mn));
    EXPECT_EQ(act, want) << what;
    // Backward: the activation's gradient from the product and the pre-activation x, also over x,
    // compared as values (relu2_bwd_bf16's vector versions may write -0 where the reference
    // writes 0).
    ref::relu2_bwd_bf16(want.data(), plain.data(), x.data(), int64_t(mn));
    const auto values = [](const std::vector<uint16_t>& h) {
      std::vector<float> f(h.size());
      for (size_t i = 0; i < h.size(); ++i) f[i] = ref::from_bf16_1(h[i]);
      return f;
    };
    k.matmul_bf16_out_relu2_bwd(test_ctx(), dinp.data(), x.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(values(dinp), values(want)) << what;
    const std::vector<uint16_t> x0 = x;
    k.matmul_bf16_out_relu2_bwd(test_ctx(), x.data(), x.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(values(x), values(want)) << what << " (dinp over inp)";
    // GELU's: the bits of the table's own gelu_fwd_bf16 / gelu_bwd_bf16 passes over the product.
    if (!k.matmul_bf16_out_gelu) continue;
    x = x0;
    std::fill(c.begin(), c.end(), uint16_t(0x1234)), std::fill(act.begin(), act.end(), uint16_t(0x1234));
    k.matmul_bf16_out_gelu(test_ctx(), c.data(), act.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(c, plain) << what << " (gelu)";
    k.gelu_fwd_bf16(test_ctx(), want.data(), plain.data(), int64_t(mn));
    EXPECT_EQ(act, want) << what << " (gelu)";
    k.gelu_bwd_bf16(test_ctx(), want.data(), plain.data(), x.data(), int64_t(mn));
    k.matmul_bf16_out_gelu_bwd(test_ctx(), dinp.data(), x.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(values(dinp), values(want)) << what << " (gelu's gradient)";
    k.matmul_bf16_out_gelu_bwd(test_ctx(), x.data(), x.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(values(x), values(want)) << what << " (gelu's gradient over inp)";
  }
}

// B packed once (the output head's weights): against double on every transpose, tails of every
// dimension, odd k, one and several reduction chunks (k past 4096), A read in place and packed
// (rows too far apart), beta 0, 1 and 0.5, and bitwise equal to the same GEMM packing per call
// (AMX where that takes the same chunks, A read in place; our row GEMM on AVX-512-BF16).
TEST_P(KernelMatmulBf16Fused, MatmulBf16PackedB) {
  const KernelTable& k = kt();
  if (!k.matmul_bf16_packed_b) GTEST_SKIP() << "the " << k.name << " backend packs no B operand";
  struct Case { int64_t m, n, k; bool ta, tb; float beta; };
  const Case cases[] = {{1, 1, 1, false, false, 0.0f},       {37, 33, 31, false, true, 1.0f},
                        {70, 100, 200, true, false, 0.5f},   {64, 96, 4160, false, false, 1.0f},
                        {96, 64, 8192 + 3, false, true, 0.0f}, {50, 40, 4200, true, true, 1.0f},
                        {1024, 256, 512, false, true, 0.0f}, {256, 64, 9000, false, false, 0.0f},
                        {48, 64, 16480, false, true, 1.0f}};  // A's rows too far apart to read in place
  for (const Case& cs : cases) {
    const std::string what = gemm_shape(cs.m, cs.n, cs.k) + " ta " + std::to_string(cs.ta) + " tb " +
                             std::to_string(cs.tb) + " beta " + std::to_string(cs.beta);
    const Buffer<uint16_t> ah = randn_bf16(cs.m * cs.k, 95), bh = randn_bf16(cs.k * cs.n, 96);
    const auto c0 = to_f32(randn(cs.m * cs.n, 97));
    Vec want(size_t(cs.m * cs.n));
    for (size_t i = 0; i < want.size(); ++i) want[i] = cs.beta * double(c0[i]);
    ref::matmul_bf16<double>(want.data(), ah.data(), bh.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
    Buffer<uint16_t> packed(size_t(k.packed_b_bf16_size(test_ctx(), cs.n, cs.k)));
    std::fill_n(packed.data(), packed.size(), uint16_t(0x7fc1));  // a NaN: every element is written
    k.pack_b_bf16(test_ctx(), packed.data(), bh.data(), cs.n, cs.k, cs.tb);
    Buffer<float> c(size_t(cs.m * cs.n));
    std::memcpy(c.data(), c0.data(), c0.size() * sizeof(float));
    k.matmul_bf16_packed_b(test_ctx(), c.data(), ah.data(), packed.data(), cs.m, cs.n, cs.k, cs.ta, cs.beta);
    EXPECT_LT(rel_err(to_f64(c.data(), c.size()), want), 1e-5) << what;
    // A in place (aligned rows at most 32 KiB apart, gemm_bf16_amx.cc): the same chunks as
    // packing per call.
    if (isa() == CpuIsa::kAmx && !cs.ta && cs.k % 32 == 0 && cs.k * 2 <= (32 << 10)) {
      Buffer<float> c2(size_t(cs.m * cs.n));
      std::memcpy(c2.data(), c0.data(), c0.size() * sizeof(float));
      ASSERT_TRUE(cpu::matmul_bf16_amx(test_ctx(), c2.data(), cs.n, false, ah.data(), bh.data(), cs.m, cs.n, cs.k,
                                       false, cs.tb, cs.beta));
      EXPECT_EQ(std::memcmp(c.data(), c2.data(), c.size() * sizeof(float)), 0) << what;
    }
    // Our row GEMM (gemm_rows_avx512.cc, AVX-512-BF16 without AMX) on the panels packed once:
    // bitwise what it computes packing them per call, where it takes the product.
    if (isa() == CpuIsa::kAvx512Bf16 && !cs.ta && cs.k % 2 == 0 &&
        (cs.beta == 0.0f || cs.beta == 1.0f)) {
      Buffer<float> c2(size_t(cs.m * cs.n));
      std::memcpy(c2.data(), c0.data(), c0.size() * sizeof(float));
      ASSERT_TRUE(cpu::gemm_rows_f32_avx512(test_ctx(), c2.data(), ah.data(), bh.data(), cs.m, cs.n, cs.k, false, cs.tb,
                                            cs.beta == 1.0f));
      EXPECT_EQ(std::memcmp(c.data(), c2.data(), c.size() * sizeof(float)), 0) << what;
    }
  }
}

// The product with the MLP's activation applied to one operand as it is read: against double on
// the activation written out (relu2_fwd_bf16's values), every transpose, either operand, shapes
// that compose (small) and that our AMX GEMM takes (m >= 1024; A^T B over 4096 and more); those
// also exactly equal to the AMX GEMM on the written-out activation, and without AMX the weight
// gradient's pattern (A^T B, relu2(B), beta 0 or 1) to our A^T B GEMM on it. The same for GELU
// (matmul_bf16_gelu) where the table has it.
TEST_P(KernelMatmulBf16Fused, MatmulBf16Relu2ReadsTheActivation) {
  const KernelTable& k = kt();
  if (!k.matmul_bf16_relu2) GTEST_SKIP() << "the " << k.name << " backend has no fused matmul_bf16_relu2";
  struct Case { int64_t m, n, k; bool ta, tb, relu2_a; float beta; bool vs_double; };
  std::vector<Case> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool relu2_a : {false, true}) {
        cases.push_back({37, 19, 45, ta, tb, relu2_a, 0.5f, true});
        cases.push_back({1024, 80, 96, ta, tb, relu2_a, 1.0f, true});
      }
  cases.push_back({512, 520, 4128, true, false, false, 1.0f, false});  // the MLP's weight gradient
  cases.push_back({512, 520, 4128, true, false, true, 0.0f, false});
  cases.push_back({520, 96, 4128, true, false, false, 0.0f, false});  // (C taller than wide)
  for (const Case& cs : cases) {
    const std::string what = gemm_shape(cs.m, cs.n, cs.k) + " ta " + std::to_string(cs.ta) + " tb " +
                             std::to_string(cs.tb) + (cs.relu2_a ? " relu2(A)" : " relu2(B)");
    const Buffer<uint16_t> a = randn_bf16(cs.m * cs.k, 88), b = randn_bf16(cs.k * cs.n, 89);
    Buffer<uint16_t> act(size_t(cs.relu2_a ? cs.m * cs.k : cs.k * cs.n));
    ref::relu2_fwd_bf16(act.data(), cs.relu2_a ? a.data() : b.data(), int64_t(act.size()));
    const uint16_t *ea = cs.relu2_a ? act.data() : a.data(), *eb = cs.relu2_a ? b.data() : act.data();
    const auto c0 = to_f32(randn(cs.m * cs.n, 90));
    std::vector<float> got = c0;
    k.matmul_bf16_relu2(test_ctx(), got.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta,
                        cs.relu2_a);
    if (cs.vs_double) {
      Vec want(c0.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = cs.beta * double(c0[i]);
      ref::matmul_bf16<double>(want.data(), ea, eb, cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
      EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what;
    }
    if (isa() == CpuIsa::kAmx && cs.m >= 512 && !(cs.ta && cs.tb)) {  // (both transposed: composed)
      std::vector<float> amx = c0;
      ASSERT_TRUE(
          cpu::matmul_bf16_amx(test_ctx(), amx.data(), cs.n, false, ea, eb, cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta));
      EXPECT_EQ(got, amx) << what;
    }
    if (isa() == CpuIsa::kAvx512Bf16 && cs.ta && !cs.tb && !cs.relu2_a &&
        (cs.beta == 0.0f || cs.beta == 1.0f)) {  // our A^T B GEMM on the activation written out
      std::vector<float> at = c0;
      ASSERT_TRUE(cpu::gemm_at_f32_avx512(test_ctx(), at.data(), ea, eb, cs.m, cs.n, cs.k, cs.beta == 1.0f));
      EXPECT_EQ(got, at) << what;
    }
    // GELU's twin: against double on the table's own gelu_fwd_bf16 written out, and bitwise our
    // A^T B GEMM on it (its composed form runs that pass, then the plain product).
    if (!k.matmul_bf16_gelu) continue;
    k.gelu_fwd_bf16(test_ctx(), act.data(), cs.relu2_a ? a.data() : b.data(), int64_t(act.size()));
    got = c0;
    k.matmul_bf16_gelu(test_ctx(), got.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta, cs.relu2_a);
    if (cs.vs_double) {
      Vec want(c0.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = cs.beta * double(c0[i]);
      ref::matmul_bf16<double>(want.data(), ea, eb, cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
      EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what << " (gelu)";
    }
    if (cs.ta && !cs.tb && !cs.relu2_a && (cs.beta == 0.0f || cs.beta == 1.0f)) {
      std::vector<float> at = c0;
      ASSERT_TRUE(cpu::gemm_at_f32_avx512(test_ctx(), at.data(), ea, eb, cs.m, cs.n, cs.k, cs.beta == 1.0f));
      EXPECT_EQ(got, at) << what << " (gelu)";
    }
  }
}

NT_TABLE_TESTS(KernelMatmulBf16Fused);

}  // namespace
}  // namespace nt
