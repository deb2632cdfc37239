// SPDX-License-Identifier: MIT
// The row kernels of every CPU kernel table against the reference in double: rotary embedding
// and the fused QK-norm, RMSNorm (with and without its bf16 copy), the soft-capped
// cross-entropy (fp32 and bf16 gradient, with and without the cap) and the MLP activations
// (ReLU², GELU, SwiGLU), on awkward (rows, width) shapes.
#include <gtest/gtest.h>

#include <string>

#include "backends/ref/ops_ref.h"
#include "kernels/kernel_cases.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::randn;
using test::rel_err;
using cases::RopeCase;
using cases::RowsCase;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;

class KernelRope : public test::TableCaseTest<RopeCase> {};

TEST_P(KernelRope, Rope) {
  const KernelTable& k = kt();
  const int64_t B = tc().b, T = tc().t, H = tc().h, D = tc().d;
  Vec cs, sn;
  test::rope_tables(T, D, cs, sn);
  Vec x = randn(B * T * H * D, 40);
  Vec y = x;
  ref::rope_apply<double>(y.data(), cs.data(), sn.data(), B, T, H, D, 1.0);
  auto xf = to_f32(x), cf = to_f32(cs), sf = to_f32(sn);
  k.rope_fwd(test_ctx(), xf.data(), cf.data(), sf.data(), B, T, H, D);
  EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), y), 1e-6);
  k.rope_bwd(test_ctx(), xf.data(), cf.data(), sf.data(), B, T, H, D);  // inverse: back to x
  EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), x), 1e-6);
}

// The fused QK-norm against the spec in double (awkward shapes, odd D, one row), and against
// the two passes it replaces, rope_fwd then rmsnorm_fwd.
TEST_P(KernelRope, RopeNorm) {
  const KernelTable& k = kt();
  const int64_t B = tc().b, T = tc().t, H = tc().h, D = tc().d, rows = B * T * H;
  Vec cs, sn;
  test::rope_tables(T, D, cs, sn);
  Vec x = randn(rows * D, 41), dy = randn(rows * D, 42);
  Vec y = x, rstd(static_cast<size_t>(rows)), dx = dy;
  ref::rope_norm_fwd<double>(y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D, 1e-6);
  ref::rope_norm_bwd<double>(dx.data(), y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D);
  auto xf = to_f32(x), cf = to_f32(cs), sf = to_f32(sn), gf = to_f32(dy), sep = to_f32(x);
  std::vector<float> rf(static_cast<size_t>(rows)), rsep(static_cast<size_t>(rows));
  k.rope_norm_fwd(test_ctx(), xf.data(), rf.data(), cf.data(), sf.data(), B, T, H, D, 1e-6f);
  EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), y), 1e-6);
  EXPECT_LT(rel_err(to_f64(rf.data(), rf.size()), rstd), 1e-6);
  k.rope_fwd(test_ctx(), sep.data(), cf.data(), sf.data(), B, T, H, D);
  k.rmsnorm_fwd(test_ctx(), sep.data(), rsep.data(), sep.data(), rows, D, 1e-6f);
  EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), to_f64(sep.data(), sep.size())), 1e-6);
  k.rope_norm_bwd(test_ctx(), gf.data(), xf.data(), rf.data(), cf.data(), sf.data(), B, T, H, D);
  EXPECT_LT(rel_err(to_f64(gf.data(), gf.size()), dx), 1e-5);
}

NT_TABLE_CASE_TESTS(Rope, KernelRope, cases::rope_cases());

// RMSNorm forward and (accumulating) backward, the cross-entropy in fp32 and with its bf16
// gradient (within half a bf16 ulp of the exact gradient plus the fp32 pass's error; garbage
// in the output must be overwritten), ReLU² over all elements.
void check_rows(const KernelTable& k, int64_t rows, int64_t width) {
  const std::string at = std::string(k.name) + " " + std::to_string(rows) + "x" + std::to_string(width);
  const size_t n = size_t(rows * width);
  Vec x = randn(n, 90, 3.0), dy = randn(n, 91), dx0 = randn(n, 92);
  auto xf = to_f32(x), dyf = to_f32(dy);
  Vec out(n), rstd(static_cast<size_t>(rows)), dx = dx0;
  ref::rmsnorm_fwd<double>(out.data(), rstd.data(), x.data(), rows, width, 1e-6);
  ref::rmsnorm_bwd<double>(dx.data(), dy.data(), out.data(), rstd.data(), rows, width, true);
  std::vector<float> of(n), rf(static_cast<size_t>(rows));
  auto dxf = to_f32(dx0);
  k.rmsnorm_fwd(test_ctx(), of.data(), rf.data(), xf.data(), rows, width, 1e-6f);
  k.rmsnorm_bwd(test_ctx(), dxf.data(), dyf.data(), of.data(), rf.data(), rows, width, true);
  EXPECT_LT(rel_err(to_f64(of.data(), n), out), 1e-6) << "rmsnorm fwd " << at;
  EXPECT_LT(rel_err(to_f64(dxf.data(), n), dx), 1e-5) << "rmsnorm bwd " << at;
  // Cross-entropy over a vocabulary of `width`, logits reaching well into the soft-cap; row 5
  // (where there is one) is ignored. Caps 15 (the model's) and 60 (past 43.5, exp(z - cap) can
  // fall below the exp's range: the kernels shift by the row's max instead), and 0: no cap.
  for (const double cap : {15.0, 60.0, 0.0}) {
    const Vec logits = randn(n, 60, (cap > 0 ? cap : 30.0) * 2.0 / 3.0);
    std::vector<int32_t> tg(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) tg[size_t(r)] = r == 5 ? -1 : int32_t((r * 37) % width);
    Vec g = logits, losses(static_cast<size_t>(rows));
    ref::softcap_xent<double>(g.data(), losses.data(), tg.data(), rows, width, cap, 0.5);
    double scale = 1e-30;
    for (double w : g) scale = std::max(scale, std::abs(w));
    {
      auto lf = to_f32(logits);
      std::vector<float> lossf(static_cast<size_t>(rows));
      k.softcap_xent(test_ctx(), lf.data(), lossf.data(), tg.data(), rows, width, float(cap), 0.5f);
      EXPECT_LT(rel_err(to_f64(lossf.data(), lossf.size()), losses), 1e-5) << "xent loss " << at << " cap " << cap;
      EXPECT_LT(rel_err(to_f64(lf.data(), n), g), 1e-5) << "xent grad " << at << " cap " << cap;
    }
    auto lf = to_f32(logits);
    std::vector<float> lossf(static_cast<size_t>(rows));
    std::vector<uint16_t> gh(n, 0x7777);
    k.softcap_xent_bf16(test_ctx(), lf.data(), lossf.data(), tg.data(), rows, width, float(cap), 0.5f, gh.data());
    EXPECT_LT(rel_err(to_f64(lossf.data(), lossf.size()), losses), 1e-5) << "xent bf16 loss " << at << " cap " << cap;
    EXPECT_EQ(test::bf16_misses(gh.data(), g, 1e-5, scale), 0) << "xent bf16 grad " << at << " cap " << cap;
  }
  Vec y(n), dr(n);
  ref::relu2_fwd<double>(y.data(), x.data(), int64_t(n));
  ref::relu2_bwd<double>(dr.data(), dy.data(), x.data(), int64_t(n));
  std::vector<float> yf(n), drf(n);
  k.relu2_fwd(test_ctx(), yf.data(), xf.data(), int64_t(n));
  k.relu2_bwd(test_ctx(), drf.data(), dyf.data(), xf.data(), int64_t(n));
  EXPECT_LT(rel_err(to_f64(yf.data(), n), y), 1e-6) << "relu2 fwd " << at;
  EXPECT_LT(rel_err(to_f64(drf.data(), n), dr), 1e-6) << "relu2 bwd " << at;
}

// GELU over rows x width elements, and SwiGLU over rows of [gate | up] (rows, 2 width): forward
// and backward (GELU's in place, as the model runs it), in fp32 and in bf16.
void check_activations(const KernelTable& k, int64_t rows, int64_t width) {
  const std::string at = std::string(k.name) + " " + std::to_string(rows) + "x" + std::to_string(width);
  const size_t n = size_t(rows * width);
  Vec x = randn(n, 93, 3.0), dy = randn(n, 94), u = randn(2 * n, 95, 3.0);
  Vec y(n), dx(n), ys(n), dus(2 * n);
  ref::gelu_fwd<double>(y.data(), x.data(), int64_t(n));
  ref::gelu_bwd<double>(dx.data(), dy.data(), x.data(), int64_t(n));
  ref::swiglu_fwd<double>(ys.data(), u.data(), rows, width);
  ref::swiglu_bwd<double>(dus.data(), dy.data(), u.data(), rows, width);
  auto xf = to_f32(x), dyf = to_f32(dy), uf = to_f32(u);
  std::vector<float> yf(n), ysf(n), dusf(2 * n, 7.0f);
  k.gelu_fwd(test_ctx(), yf.data(), xf.data(), int64_t(n));
  k.gelu_bwd(test_ctx(), dyf.data(), dyf.data(), xf.data(), int64_t(n));
  k.swiglu_fwd(test_ctx(), ysf.data(), uf.data(), rows, width);
  auto dyf2 = to_f32(dy);
  k.swiglu_bwd(test_ctx(), dusf.data(), dyf2.data(), uf.data(), rows, width);
  EXPECT_LT(rel_err(to_f64(yf.data(), n), y), 1e-6) << "gelu fwd " << at;
  // (The vector tanh is good to about 1e-7 absolute; the derivative's x-weighted sech^2 term
  // carries that to a few 1e-6 relative.)
  EXPECT_LT(rel_err(to_f64(dyf.data(), n), dx), 1e-5) << "gelu bwd " << at;
  EXPECT_LT(rel_err(to_f64(ysf.data(), n), ys), 1e-6) << "swiglu fwd " << at;
  EXPECT_LT(rel_err(to_f64(dusf.data(), 2 * n), dus), 1e-6) << "swiglu bwd " << at;

  // The bf16 versions: inputs rounded to bf16, results against the spec in double on the same
  // rounded inputs, each within half a bf16 ulp (one rounding) plus the fp32 kernels' own error.
  std::vector<uint16_t> xh(n), dyh(n), uh(2 * n), yh(n, 0xdead), dxh(n, 0xdead), ysh(n, 0xdead), dush(2 * n, 0xdead);
  ref::to_bf16(xh.data(), to_f32(x).data(), int64_t(n));
  ref::to_bf16(dyh.data(), to_f32(dy).data(), int64_t(n));
  ref::to_bf16(uh.data(), to_f32(u).data(), int64_t(2 * n));
  Vec xr(n), dyr(n), ur(2 * n);
  for (size_t i = 0; i < n; ++i) xr[i] = ref::from_bf16_1(xh[i]), dyr[i] = ref::from_bf16_1(dyh[i]);
  for (size_t i = 0; i < 2 * n; ++i) ur[i] = ref::from_bf16_1(uh[i]);
  ref::gelu_fwd<double>(y.data(), xr.data(), int64_t(n));
  ref::gelu_bwd<double>(dx.data(), dyr.data(), xr.data(), int64_t(n));
  ref::swiglu_fwd<double>(ys.data(), ur.data(), rows, width);
  ref::swiglu_bwd<double>(dus.data(), dyr.data(), ur.data(), rows, width);
  k.gelu_fwd_bf16(test_ctx(), yh.data(), xh.data(), int64_t(n));
  k.gelu_bwd_bf16(test_ctx(), dxh.data(), dyh.data(), xh.data(), int64_t(n));
  k.swiglu_fwd_bf16(test_ctx(), ysh.data(), uh.data(), rows, width);
  k.swiglu_bwd_bf16(test_ctx(), dush.data(), dyh.data(), uh.data(), rows, width);
  EXPECT_EQ(test::bf16_misses(yh.data(), y, 1e-6, test::max_abs(y)), 0) << "gelu fwd bf16 " << at;
  EXPECT_EQ(test::bf16_misses(dxh.data(), dx, 1e-5, test::max_abs(dx)), 0) << "gelu bwd bf16 " << at;
  EXPECT_EQ(test::bf16_misses(ysh.data(), ys, 1e-6, test::max_abs(ys)), 0) << "swiglu fwd bf16 " << at;
  EXPECT_EQ(test::bf16_misses(dush.data(), dus, 1e-6, test::max_abs(dus)), 0) << "swiglu bwd bf16 " << at;
}

class KernelRows : public test::TableCaseTest<RowsCase> {};
TEST_P(KernelRows, RowKernelsOnShapes) { check_rows(kt(), tc().rows, tc().width); }
TEST_P(KernelRows, ActivationsOnShapes) { check_activations(kt(), tc().rows, tc().width); }
NT_TABLE_CASE_TESTS(Rows, KernelRows, cases::row_cases());

// NT_TEST_ROW_SHAPES="rows,width;..." of the caller's choice on every table this process runs.
TEST(KernelRowsEnv, RowKernelsOnEnvShapes) {
  const auto shapes = test::env_shapes<2>("NT_TEST_ROW_SHAPES");
  if (shapes.empty()) GTEST_SKIP() << "NT_TEST_ROW_SHAPES is not set";
  test::for_each_runnable_table([&](const KernelTable& k) {
    for (auto [rows, width] : shapes) check_rows(k, rows, width);
  });
}

// The norms with a bf16 copy: the forward's fp32 result exactly the table's rmsnorm_fwd and its
// copy exactly its to_bf16 of it (or only the copy, out null); the backward exactly rmsnorm_bwd
// from the copy widened, and its copy to_bf16 of that, also written over the copy it reads
// (dinp_h == out_h, as the model's final norm does).
class KernelRowsBf16 : public test::TableCaseTest<RowsCase> {};
TEST_P(KernelRowsBf16, RmsNormBf16CopyIsTheNormThenToBf16) {
  const KernelTable& k = kt();
  const int64_t rows = tc().rows, width = tc().width;
  for (bool acc : {false, true}) {
    const std::string at = std::string(k.name) + " " + tc().name() + (acc ? " accumulating" : "");
    const size_t n = size_t(rows * width);
    const auto x = to_f32(randn(n, 96, 3.0)), dy = to_f32(randn(n, 97)), dx0 = to_f32(randn(n, 98));
    const auto nrows = static_cast<size_t>(rows);
    std::vector<float> out(n), rstd(nrows), dx = dx0, want_out(n), want_rstd(nrows), want_dx = dx0, wide(n);
    std::vector<uint16_t> out_h(n, 0x1234), dx_h(n, 0x1234), want_out_h(n), want_dx_h(n);
    k.rmsnorm_fwd(test_ctx(), want_out.data(), want_rstd.data(), x.data(), rows, width, 1e-6f);
    k.to_bf16(test_ctx(), want_out_h.data(), want_out.data(), int64_t(n));
    for (size_t e = 0; e < n; ++e) wide[e] = ref::from_bf16_1(want_out_h[e]);
    k.rmsnorm_bwd(test_ctx(), want_dx.data(), dy.data(), wide.data(), want_rstd.data(), rows, width, acc);
    k.to_bf16(test_ctx(), want_dx_h.data(), want_dx.data(), int64_t(n));
    k.rmsnorm_fwd_bf16(test_ctx(), out.data(), out_h.data(), rstd.data(), x.data(), rows, width, 1e-6f);
    EXPECT_EQ(out, want_out) << at;
    EXPECT_EQ(rstd, want_rstd) << at;
    EXPECT_EQ(out_h, want_out_h) << at;
    std::vector<uint16_t> only_h(n, 0x1234);
    k.rmsnorm_fwd_bf16(test_ctx(), nullptr, only_h.data(), rstd.data(), x.data(), rows, width, 1e-6f);
    EXPECT_EQ(only_h, want_out_h) << at << " (copy only)";
    k.rmsnorm_bwd_bf16(test_ctx(), dx.data(), dx_h.data(), dy.data(), out_h.data(), rstd.data(), rows, width, acc);
    EXPECT_EQ(dx, want_dx) << at;
    EXPECT_EQ(dx_h, want_dx_h) << at;
    dx = dx0;
    k.rmsnorm_bwd_bf16(test_ctx(), dx.data(), out_h.data(), dy.data(), out_h.data(), rstd.data(), rows, width, acc);
    EXPECT_EQ(dx, want_dx) << at << " (dinp_h over out_h)";
    EXPECT_EQ(out_h, want_dx_h) << at << " (dinp_h over out_h)";
  }
}
NT_TABLE_CASE_TESTS(RowsBf16, KernelRowsBf16, cases::row_bf16_cases());

}  // namespace
}  // namespace nt
