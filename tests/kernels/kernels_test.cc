// SPDX-License-Identifier: MIT
// Every op: (1) its reference backward against central finite differences of its reference
// forward, in double; (2) the CPU backend (float) against the reference (double) on awkward
// shapes; (3) the accumulate/overwrite convention.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "backends/ref/ref_backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/steal_ranges.h"
#include "backends/ref/ops_ref.h"
#include "core/buffer.h"
#include "core/check.h"
#include "core/system.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "composed/upper_triangle.h"
#include "test_util.h"

namespace nt {
namespace {

using test::env_shapes;
using test::randn;
using test::rel_err;
using test::to_f32;
using test::to_f64;
using Vec = std::vector<double>;

// n bf16 values: randn(n, seed) rounded.
Buffer<uint16_t> randn_bf16(int64_t n, uint64_t seed) {
  Buffer<uint16_t> h{size_t(n)};
  const auto f = to_f32(randn(size_t(n), seed));
  ref::to_bf16(h.data(), f.data(), n);
  return h;
}

// "m x n x k" as the GEMM tests name a shape.
std::string gemm_shape(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// Numeric gradient of L(x) = sum(w * f(x)) by central differences (double).
Vec numeric_grad(Vec x, const std::function<Vec(const Vec&)>& f, const Vec& w, double h = 1e-6) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    Vec fp = f(x);
    x[i] = x0 - h;
    Vec fm = f(x);
    x[i] = x0;
    double s = 0;
    for (size_t j = 0; j < fp.size(); ++j) s += w[j] * (fp[j] - fm[j]);
    g[i] = s / (2 * h);
  }
  return g;
}

void rope_tables(int64_t T, int64_t D, Vec& cos, Vec& sin) {
  cos.resize(static_cast<size_t>(T * D / 2));
  sin.resize(static_cast<size_t>(T * D / 2));
  for (int64_t p = 0; p < T; ++p)
    for (int64_t j = 0; j < D / 2; ++j) {
      const double a = double(p) * std::pow(10000.0, -2.0 * double(j) / double(D));
      cos[static_cast<size_t>(p * D / 2 + j)] = std::cos(a);
      sin[static_cast<size_t>(p * D / 2 + j)] = std::sin(a);
    }
}

const KernelTable& cpu = cpu_kernels();

// ---------------------------------------------------------------- gradient checks (reference)

TEST(KernelGrad, RmsNorm) {
  const int64_t rows = 3, dim = 13;
  Vec x = randn(rows * dim, 1), w = randn(rows * dim, 2);
  auto f = [&](const Vec& in) {
    Vec out(in.size()), rstd(rows);
    ref::rmsnorm_fwd<double>(out.data(), rstd.data(), in.data(), rows, dim, 1e-6);
    return out;
  };
  Vec out(x.size()), rstd(rows), dx(x.size());
  ref::rmsnorm_fwd<double>(out.data(), rstd.data(), x.data(), rows, dim, 1e-6);
  ref::rmsnorm_bwd<double>(dx.data(), w.data(), out.data(), rstd.data(), rows, dim, false);
  EXPECT_LT(rel_err(dx, numeric_grad(x, f, w)), 1e-7);
}

TEST(KernelGrad, Rope) {
  const int64_t B = 2, T = 5, H = 3, D = 6;
  Vec cs, sn;
  rope_tables(T, D, cs, sn);
  Vec x = randn(B * T * H * D, 3), w = randn(B * T * H * D, 4);
  auto f = [&](const Vec& in) {
    Vec y = in;
    ref::rope_apply<double>(y.data(), cs.data(), sn.data(), B, T, H, D, 1.0);
    return y;
  };
  Vec dx = w;
  ref::rope_apply<double>(dx.data(), cs.data(), sn.data(), B, T, H, D, -1.0);
  EXPECT_LT(rel_err(dx, numeric_grad(x, f, w)), 1e-8);
}

// The fused QK-norm (rotary, then RMSNorm of each head row): its backward against finite
// differences of its forward, in double; an odd D leaves one element of each row unrotated.
TEST(KernelGrad, RopeNorm) {
  for (int64_t D : {6, 7}) {
    const int64_t B = 2, T = 5, H = 3, rows = B * T * H;
    Vec cs, sn;
    rope_tables(T, D, cs, sn);
    Vec x = randn(rows * D, 13), w = randn(rows * D, 14);
    auto f = [&](const Vec& in) {
      Vec y = in, rstd(static_cast<size_t>(rows));
      ref::rope_norm_fwd<double>(y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D, 1e-6);
      return y;
    };
    Vec y = x, rstd(static_cast<size_t>(rows)), dx = w;
    ref::rope_norm_fwd<double>(y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D, 1e-6);
    ref::rope_norm_bwd<double>(dx.data(), y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D);
    EXPECT_LT(rel_err(dx, numeric_grad(x, f, w)), 1e-7) << "D " << D;
  }
}

TEST(KernelGrad, AttentionGroupedQuery) {
  // Awkward: T = 7, D = 24, three query heads sharing one key/value head.
  const int64_t B = 2, T = 7, H = 3, KVH = 1, D = 24;
  Vec q = randn(B * T * H * D, 5), k = randn(B * T * KVH * D, 6), v = randn(B * T * KVH * D, 7);
  Vec w = randn(B * T * H * D, 8);
  auto fwd = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
    Vec out(static_cast<size_t>(B * T * H * D)), lse(static_cast<size_t>(B * H * T));
    ref::attention_fwd<double>(out.data(), lse.data(), qq.data(), kk.data(), vv.data(), B, T, H, KVH, D);
    return out;
  };
  Vec out(static_cast<size_t>(B * T * H * D)), lse(static_cast<size_t>(B * H * T));
  ref::attention_fwd<double>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, KVH, D);
  Vec dq(q.size()), dk(k.size()), dv(v.size());
  ref::attention_bwd<double>(dq.data(), dk.data(), dv.data(), w.data(), q.data(), k.data(), v.data(), out.data(),
                             lse.data(), B, T, H, KVH, D);
  EXPECT_LT(rel_err(dq, numeric_grad(q, [&](const Vec& x) { return fwd(x, k, v); }, w)), 1e-7);
  EXPECT_LT(rel_err(dk, numeric_grad(k, [&](const Vec& x) { return fwd(q, x, v); }, w)), 1e-7);
  EXPECT_LT(rel_err(dv, numeric_grad(v, [&](const Vec& x) { return fwd(q, k, x); }, w)), 1e-7);
}

TEST(KernelGrad, Relu2) {
  Vec x = randn(50, 9), w = randn(50, 10);
  for (auto& e : x) if (std::abs(e) < 1e-3) e = 0.5;  // keep away from the kink
  auto f = [&](const Vec& in) {
    Vec y(in.size());
    ref::relu2_fwd<double>(y.data(), in.data(), int64_t(in.size()));
    return y;
  };
  Vec dx(x.size());
  ref::relu2_bwd<double>(dx.data(), w.data(), x.data(), int64_t(x.size()));
  EXPECT_LT(rel_err(dx, numeric_grad(x, f, w)), 1e-7);
}

TEST(KernelGrad, SoftcapCrossEntropy) {
  const int64_t rows = 4, V = 11;
  Vec l = randn(rows * V, 11, 20.0);  // large logits so the soft-cap matters
  std::vector<int32_t> tg = {3, -1, 0, 10};
  Vec w(static_cast<size_t>(rows), 1.0);
  auto f = [&](const Vec& in) {
    Vec z = in, losses(static_cast<size_t>(rows));
    ref::softcap_xent<double>(z.data(), losses.data(), tg.data(), rows, V, 15.0, 0.0);
    return losses;
  };
  Vec g = l, losses(static_cast<size_t>(rows));
  ref::softcap_xent<double>(g.data(), losses.data(), tg.data(), rows, V, 15.0, 1.0);
  EXPECT_EQ(losses[1], 0.0);
  EXPECT_LT(rel_err(g, numeric_grad(l, f, w)), 1e-7);
}

TEST(KernelGrad, EmbeddingAndMatmul) {
  const int64_t n = 5, c = 4, V = 6;
  std::vector<int32_t> ids = {1, 5, 1, 0, 3};
  Vec wte = randn(V * c, 12), w = randn(n * c, 13);
  auto f = [&](const Vec& t) {
    Vec out(static_cast<size_t>(n * c));
    ref::embed_fwd<double>(out.data(), ids.data(), t.data(), n, c);
    return out;
  };
  Vec dwte(wte.size(), 0.0);
  ref::embed_bwd<double>(dwte.data(), w.data(), ids.data(), n, c);
  EXPECT_LT(rel_err(dwte, numeric_grad(wte, f, w)), 1e-8);
  // matmul: C = A B^T, dA = dC B, dB = dC^T A.
  const int64_t M = 3, N = 5, K = 4;
  Vec a = randn(M * K, 14), b = randn(N * K, 15), wc = randn(M * N, 16);
  auto fa = [&](const Vec& x) {
    Vec cc(static_cast<size_t>(M * N));
    ref::matmul<double>(cc.data(), x.data(), b.data(), M, N, K, false, true, 0.0);
    return cc;
  };
  Vec da(static_cast<size_t>(M * K)), db(static_cast<size_t>(N * K));
  ref::matmul<double>(da.data(), wc.data(), b.data(), M, K, N, false, false, 0.0);
  ref::matmul<double>(db.data(), wc.data(), a.data(), N, K, M, true, false, 0.0);
  EXPECT_LT(rel_err(da, numeric_grad(a, fa, wc)), 1e-8);
  auto fb = [&](const Vec& x) {
    Vec cc(static_cast<size_t>(M * N));
    ref::matmul<double>(cc.data(), a.data(), x.data(), M, N, K, false, true, 0.0);
    return cc;
  };
  EXPECT_LT(rel_err(db, numeric_grad(b, fb, wc)), 1e-8);
}

// ---------------------------------------------------------------- CPU backend vs reference

// Every transpose and both betas; shapes with k > n take the matmul primitive on C = A B^T
// (matmul_cpu.cc), the others sgemm. On AVX-512, {130, 40, 66} with B transposed (k even, k >=
// n, m >= 2 n) takes our own fp32 GEMM (sgemm_nt_avx512) for beta 0 and 1, oneDNN for beta 0.5;
// {1100, 512, 40} with A transposed takes sgemm_at_avx512 (m >= 2 n, n >= 512).
TEST(KernelParity, MatmulAllTransposes) {
  auto shapes = env_shapes<3>("NT_TEST_MATMUL_SHAPES");
  // {200, 9, 33} transposed-A takes the matmul primitive (m >= 8 n, the output head's dW).
  shapes.insert(shapes.begin(), {{1, 1, 1}, {7, 9, 17}, {33, 65, 129}, {64, 31, 257}, {200, 9, 33}, {130, 40, 66}, {1100, 512, 40}});
  for (auto [M, N, K] : shapes) {
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (double beta : {0.0, 1.0, 0.5}) {
          Vec a = randn(M * K, 20), b = randn(K * N, 21), c0 = randn(M * N, 22);
          Vec cref = c0;
          ref::matmul<double>(cref.data(), a.data(), b.data(), M, N, K, ta, tb, beta);
          auto af = to_f32(a), bf = to_f32(b), cf = to_f32(c0);
          cpu.matmul(cf.data(), af.data(), bf.data(), M, N, K, ta, tb, float(beta));
          EXPECT_LT(rel_err(to_f64(cf.data(), cf.size()), cref), 20 * std::sqrt(double(K)) * 6e-8)
              << M << "x" << N << "x" << K << " ta=" << ta << " tb=" << tb << " beta=" << beta;
        }
  }
  // Shapes that the table's rules send to kernels of their own (on AVX-512, matmul_cpu.cc): A B
  // with A tall and B 512 wide, threaded; on one thread (Muon's Newton-Schulz), the Gram product
  // X X^T and a square times a wide matrix.
  struct Case { int64_t m, n, k; bool tb, gram; int threads; double beta; };
  const int threads = omp_get_max_threads();
  for (const Case& cs : {Case{4100, 512, 520, false, false, threads, 1.0}, Case{160, 160, 96, true, true, 1, 0.0},
                         Case{130, 130, 400, true, true, 1, 0.0}, Case{160, 300, 160, false, false, 1, 1.0}}) {
    Vec a = randn(cs.m * cs.k, 23), b = cs.gram ? a : randn(cs.k * cs.n, 24), c0 = randn(cs.m * cs.n, 25), cref = c0;
    ref::matmul<double>(cref.data(), a.data(), b.data(), cs.m, cs.n, cs.k, false, cs.tb, cs.beta);
    auto af = to_f32(a), bf = to_f32(b), cf = to_f32(c0);
    omp_set_num_threads(cs.threads);
    cpu.matmul(cf.data(), af.data(), cs.gram ? af.data() : bf.data(), cs.m, cs.n, cs.k, false, cs.tb, float(cs.beta));
    omp_set_num_threads(threads);
    EXPECT_LT(rel_err(to_f64(cf.data(), cf.size()), cref), 20 * std::sqrt(double(cs.k)) * 6e-8)
        << gemm_shape(cs.m, cs.n, cs.k) << " threads " << cs.threads;
  }
}

TEST(KernelParity, Rope) {
  const int64_t B = 2, T = 9, H = 3, D = 10;
  Vec cs, sn;
  rope_tables(T, D, cs, sn);
  Vec x = randn(B * T * H * D, 40);
  Vec y = x;
  ref::rope_apply<double>(y.data(), cs.data(), sn.data(), B, T, H, D, 1.0);
  auto xf = to_f32(x), cf = to_f32(cs), sf = to_f32(sn);
  cpu.rope_fwd(xf.data(), cf.data(), sf.data(), B, T, H, D);
  EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), y), 1e-6);
  cpu.rope_bwd(xf.data(), cf.data(), sf.data(), B, T, H, D);  // inverse: back to x
  EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), x), 1e-6);
}

// The fused QK-norm on the CPU against the spec in double (awkward shapes, odd D, one row),
// and against the two passes it replaces, rope_fwd then rmsnorm_fwd.
TEST(KernelParity, RopeNorm) {
  struct Shape { int64_t B, T, H, D; };
  for (Shape sh : {Shape{2, 9, 3, 10}, Shape{1, 5, 2, 7}, Shape{2, 3, 4, 64}, Shape{1, 1, 1, 2}}) {
    const int64_t B = sh.B, T = sh.T, H = sh.H, D = sh.D, rows = B * T * H;
    Vec cs, sn;
    rope_tables(T, D, cs, sn);
    Vec x = randn(rows * D, 41), dy = randn(rows * D, 42);
    Vec y = x, rstd(static_cast<size_t>(rows)), dx = dy;
    ref::rope_norm_fwd<double>(y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D, 1e-6);
    ref::rope_norm_bwd<double>(dx.data(), y.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D);
    auto xf = to_f32(x), cf = to_f32(cs), sf = to_f32(sn), gf = to_f32(dy), sep = to_f32(x);
    std::vector<float> rf(static_cast<size_t>(rows)), rsep(static_cast<size_t>(rows));
    cpu.rope_norm_fwd(xf.data(), rf.data(), cf.data(), sf.data(), B, T, H, D, 1e-6f);
    const std::string at = "D " + std::to_string(D) + " T " + std::to_string(T);
    EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), y), 1e-6) << at;
    EXPECT_LT(rel_err(to_f64(rf.data(), rf.size()), rstd), 1e-6) << at;
    cpu.rope_fwd(sep.data(), cf.data(), sf.data(), B, T, H, D);
    cpu.rmsnorm_fwd(sep.data(), rsep.data(), sep.data(), rows, D, 1e-6f);
    EXPECT_LT(rel_err(to_f64(xf.data(), xf.size()), to_f64(sep.data(), sep.size())), 1e-6) << at;
    cpu.rope_norm_bwd(gf.data(), xf.data(), rf.data(), cf.data(), sf.data(), B, T, H, D);
    EXPECT_LT(rel_err(to_f64(gf.data(), gf.size()), dx), 1e-5) << at;
  }
}

// The dispatched kernels (the tiled ones on AVX-512) and the sgemm ones of the AVX2 floor,
// whatever this CPU has.
TEST(KernelParity, Attention) {
  struct Shape { int64_t B, T, H, KVH, D; };
  using Fwd = decltype(KernelTable::attention_fwd);
  using Bwd = decltype(KernelTable::attention_bwd);
  struct Impl { const char* name; Fwd fwd; Bwd bwd; };
  const Impl impls[] = {{"dispatched", cpu.attention_fwd, cpu.attention_bwd},
                        {"sgemm", cpu::attention_fwd, cpu::attention_bwd}};
  // T 900 at D 128 or 72: the tiled backward takes its keys in several spans (key_span).
  std::vector<Shape> shapes = {{1, 1, 1, 1, 2},  {2, 7, 3, 1, 24},   {1, 33, 4, 2, 17 + 1}, {2, 70, 2, 2, 64},
                               {1, 150, 4, 2, 32}, {1, 129, 2, 1, 64}, {1, 20, 2, 2, 7},    {1, 900, 2, 1, 128},
                               {1, 700, 2, 2, 72},  {1, 1100, 1, 1, 72},  // past T 1024: 64-row query blocks
                               {3, 600, 1, 1, 112}};  // three tasks whose rows are not fetched ahead (over 512 KiB)
  for (auto [b, t, h, kvh, d] : env_shapes<5>("NT_TEST_ATTENTION_SHAPES")) shapes.push_back({b, t, h, kvh, d});
  for (const Impl& impl : impls)
    for (Shape s : shapes) {
      const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.KVH * s.D;
      Vec q = randn(nq, 50), k = randn(nk, 51), v = randn(nk, 52), dout = randn(nq, 53);
      Vec out(static_cast<size_t>(nq)), lse(static_cast<size_t>(s.B * s.H * s.T)), dq(static_cast<size_t>(nq)), dk(static_cast<size_t>(nk)), dv(static_cast<size_t>(nk));
      ref::attention_fwd<double>(out.data(), lse.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.KVH, s.D);
      ref::attention_bwd<double>(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), out.data(),
                                 lse.data(), s.B, s.T, s.H, s.KVH, s.D);
      auto qf = to_f32(q), kf = to_f32(k), vf = to_f32(v), df = to_f32(dout);
      std::vector<float> of(static_cast<size_t>(nq)), lf(lse.size()), dqf(static_cast<size_t>(nq), 7.f), dkf(static_cast<size_t>(nk), 7.f), dvf(static_cast<size_t>(nk), 7.f);
      impl.fwd(of.data(), lf.data(), qf.data(), kf.data(), vf.data(), s.B, s.T, s.H, s.KVH, s.D);
      impl.bwd(dqf.data(), dkf.data(), dvf.data(), df.data(), qf.data(), kf.data(), vf.data(), of.data(), lf.data(), s.B,
               s.T, s.H, s.KVH, s.D);
      const std::string at = std::string(impl.name) + " T " + std::to_string(s.T) + " D " + std::to_string(s.D);
      EXPECT_LT(rel_err(to_f64(of.data(), of.size()), out), 1e-5) << at;
      EXPECT_LT(rel_err(to_f64(lf.data(), lf.size()), lse), 1e-5) << at;
      EXPECT_LT(rel_err(to_f64(dqf.data(), dqf.size()), dq), 1e-4) << at;
      EXPECT_LT(rel_err(to_f64(dkf.data(), dkf.size()), dk), 1e-4) << at;
      EXPECT_LT(rel_err(to_f64(dvf.data(), dvf.size()), dv), 1e-4) << at;
    }
}

TEST(KernelParity, MatmulGramIsSymmetricAndExact) {
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
        cpu.matmul(got.data(), xf.data(), xf.data(), m, m, k, false, true, 0.0f);
        EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what;
        for (int64_t i = 0; gram && i < m; ++i)
          for (int64_t j = 0; j < i; ++j) ASSERT_EQ(got[size_t(i * m + j)], got[size_t(j * m + i)]) << what;
        // The bf16 GEMM: exact against the widened operands, symmetric on the Gram path.
        std::vector<uint16_t> xh(xf.size());
        ref::to_bf16(xh.data(), xf.data(), int64_t(xf.size()));
        Vec want_h(static_cast<size_t>(m * m));
        ref::matmul_bf16<double>(want_h.data(), xh.data(), xh.data(), m, m, k, false, true, 0.0);
        std::fill(got.begin(), got.end(), 5.0f);
        cpu.matmul_bf16(got.data(), xh.data(), xh.data(), m, m, k, false, true, 0.0f);
        EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want_h), 1e-5) << "bf16, " << what;
        for (int64_t i = 0; gram && i < m; ++i)
          for (int64_t j = 0; j < i; ++j) ASSERT_EQ(got[size_t(i * m + j)], got[size_t(j * m + i)]) << "bf16, " << what;
      }
  omp_set_num_threads(saved);
}

// ---------------------------------------------------------------- bf16 (mixed precision)

TEST(KernelParity, ToBf16RoundsToNearestEven) {
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
    cpu.to_bf16(b.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a[size_t(i)], b[size_t(i)]) << i << " " << x[size_t(i)];
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  uint16_t h = 0;
  cpu.to_bf16(&h, &nan, 1);
  EXPECT_TRUE(std::isnan(ref::from_bf16_1(h)));
}

// The bf16 MLP activation (bf16 pre-activation and gradient in, bf16 out) against the scalar
// spec, bit for bit: the dispatched kernels and the AVX2 floor's, on signed zeros, values whose
// square overflows, infinities, NaN and random values; short odd lengths and one long enough
// for the threaded path.
TEST(KernelParity, Relu2Bf16MatchesTheSpec) {
  std::vector<float> x = {1.0f, -1.0f, 0.0f, -0.0f, 3.14159265f, -2.71828f, 1e30f, -1e-30f, 1e20f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  for (double v : randn(100003, 72)) x.push_back(float(v));
  std::vector<uint16_t> xh(x.size()), dyh(x.size());
  ref::to_bf16(xh.data(), x.data(), int64_t(x.size()));
  std::vector<float> dy(x.rbegin(), x.rend());
  for (float& v : dy) v = std::isfinite(v) ? v * 1e-3f : 1.0f;
  ref::to_bf16(dyh.data(), dy.data(), int64_t(dy.size()));
  struct Impl { const char* name; decltype(KernelTable::relu2_fwd_bf16) fwd; decltype(KernelTable::relu2_bwd_bf16) bwd; };
  for (const Impl& impl : {Impl{"dispatched", cpu.relu2_fwd_bf16, cpu.relu2_bwd_bf16},
                           Impl{"avx2", cpu::relu2_fwd_bf16_avx2, cpu::relu2_bwd_bf16_avx2}})
    for (int64_t n : {int64_t(x.size()), int64_t(45), int64_t(17), int64_t(1)}) {
      std::vector<uint16_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), 0xdead);
      ref::relu2_fwd_bf16(want.data(), xh.data(), n);
      impl.fwd(got.data(), xh.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want[size_t(i)], got[size_t(i)]) << impl.name << " fwd " << i << " " << x[size_t(i)];
      ref::relu2_bwd_bf16(want.data(), dyh.data(), xh.data(), n);
      impl.bwd(got.data(), dyh.data(), xh.data(), n);
      for (int64_t i = 0; i < n; ++i) {  // as values: a zero gradient may come out as -0
        const float w = ref::from_bf16_1(want[size_t(i)]), g = ref::from_bf16_1(got[size_t(i)]);
        if (std::isnan(w)) ASSERT_TRUE(std::isnan(g)) << impl.name << " bwd " << i;
        else ASSERT_EQ(w, g) << impl.name << " bwd " << i << " " << x[size_t(i)];
      }
    }
  // The spec itself, on values it must get right: relu(x)^2 and 2 relu(x) dy, each rounded once.
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
TEST(KernelParity, ToBf16ThreadedPath) {
  Vec big = randn(100003, 71);
  auto bf = to_f32(big);
  std::vector<uint16_t> a(bf.size()), b(bf.size());
  ref::to_bf16(a.data(), bf.data(), int64_t(bf.size()));
  cpu.to_bf16(b.data(), bf.data(), int64_t(bf.size()));
  EXPECT_EQ(a, b);
}

// The strided conversion writes each row at its offset and leaves the columns between untouched.
TEST(KernelParity, ToBf16Rows) {
  const int64_t rows = 37, cols = 45, ld = 50;
  auto x = to_f32(randn(rows * cols, 95));
  std::vector<uint16_t> want(size_t(rows * ld), 0x1234);
  ref::to_bf16_rows(want.data(), ld, x.data(), rows, cols);
  using Fn = decltype(KernelTable::to_bf16_rows);
  const std::pair<const char*, Fn> impls[] = {{"dispatched", cpu.to_bf16_rows}, {"avx2", cpu::to_bf16_rows_avx2}};
  for (const auto& [name, fn] : impls) {
    std::vector<uint16_t> got(size_t(rows * ld), 0x1234);
    fn(got.data(), ld, x.data(), rows, cols);
    EXPECT_EQ(got, want) << name;
  }
}

// The norms with a bf16 copy: the forward's fp32 result exactly rmsnorm_fwd's and its copy
// exactly to_bf16 of it (or only the copy, out null); the backward exactly rmsnorm_bwd from the
// copy widened, and its copy to_bf16 of that, also written over the copy it reads (dinp_h ==
// out_h, as the model's final norm does). Dispatched and AVX2 floor, on awkward widths.
TEST(KernelParity, RmsNormBf16CopyIsTheNormThenToBf16) {
  using Fwd = decltype(KernelTable::rmsnorm_fwd_bf16);
  using Bwd = decltype(KernelTable::rmsnorm_bwd_bf16);
  const std::pair<Fwd, Bwd> impls[] = {{cpu.rmsnorm_fwd_bf16, cpu.rmsnorm_bwd_bf16},
                                       {cpu::rmsnorm_fwd_bf16_avx2, cpu::rmsnorm_bwd_bf16_avx2}};
  for (auto [rows, width] : {std::pair<int64_t, int64_t>{1, 1}, {9, 17}, {37, 45}, {130, 512}, {3, 1000}})
    for (bool acc : {false, true})
      for (int i = 0; i < 2; ++i) {
        const std::string at = std::to_string(rows) + "x" + std::to_string(width) + (i ? " avx2" : " dispatched");
        const size_t n = size_t(rows * width);
        const auto x = to_f32(randn(n, 96, 3.0)), dy = to_f32(randn(n, 97)), dx0 = to_f32(randn(n, 98));
        const auto nrows = static_cast<size_t>(rows);
        std::vector<float> out(n), rstd(nrows), dx = dx0, want_out(n), want_rstd(nrows), want_dx = dx0, wide(n);
        std::vector<uint16_t> out_h(n, 0x1234), dx_h(n, 0x1234), want_out_h(n), want_dx_h(n);
        cpu.rmsnorm_fwd(want_out.data(), want_rstd.data(), x.data(), rows, width, 1e-6f);
        (i ? cpu::to_bf16_row_avx2 : cpu.to_bf16)(want_out_h.data(), want_out.data(), int64_t(n));
        for (size_t e = 0; e < n; ++e) wide[e] = ref::from_bf16_1(want_out_h[e]);
        cpu.rmsnorm_bwd(want_dx.data(), dy.data(), wide.data(), want_rstd.data(), rows, width, acc);
        (i ? cpu::to_bf16_row_avx2 : cpu.to_bf16)(want_dx_h.data(), want_dx.data(), int64_t(n));
        impls[i].first(out.data(), out_h.data(), rstd.data(), x.data(), rows, width, 1e-6f);
        EXPECT_EQ(out, want_out) << at;
        EXPECT_EQ(rstd, want_rstd) << at;
        EXPECT_EQ(out_h, want_out_h) << at;
        std::vector<uint16_t> only_h(n, 0x1234);
        impls[i].first(nullptr, only_h.data(), rstd.data(), x.data(), rows, width, 1e-6f);
        EXPECT_EQ(only_h, want_out_h) << at << " (copy only)";
        impls[i].second(dx.data(), dx_h.data(), dy.data(), out_h.data(), rstd.data(), rows, width, acc);
        EXPECT_EQ(dx, want_dx) << at << (acc ? " accumulating" : "");
        EXPECT_EQ(dx_h, want_dx_h) << at << (acc ? " accumulating" : "");
        dx = dx0;
        impls[i].second(dx.data(), out_h.data(), dy.data(), out_h.data(), rstd.data(), rows, width, acc);
        EXPECT_EQ(dx, want_dx) << at << " (dinp_h over out_h)";
        EXPECT_EQ(out_h, want_dx_h) << at << " (dinp_h over out_h)";
      }
}

TEST(KernelParity, MatmulBf16AllTransposes) {
  struct Shape { int64_t m, n, k; };
  std::vector<Shape> shapes = {{1, 1, 1}, {37, 19, 45}, {130, 67, 258}, {5, 300, 64}};
  for (auto [m, n, k] : env_shapes<3>("NT_TEST_MATMUL_SHAPES")) shapes.push_back({m, n, k});
  for (Shape s : shapes) {
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (float beta : {0.0f, 1.0f}) {
          Vec a = randn(s.m * s.k, 80), b = randn(s.k * s.n, 81), c0 = randn(s.m * s.n, 82);
          auto af = to_f32(a), bf = to_f32(b);
          std::vector<uint16_t> ah(af.size()), bh(bf.size());
          ref::to_bf16(ah.data(), af.data(), int64_t(af.size()));
          ref::to_bf16(bh.data(), bf.data(), int64_t(bf.size()));
          Vec want = c0;
          ref::matmul_bf16<double>(want.data(), ah.data(), bh.data(), s.m, s.n, s.k, ta, tb, double(beta));
          auto got = to_f32(c0);
          cpu.matmul_bf16(got.data(), ah.data(), bh.data(), s.m, s.n, s.k, ta, tb, beta);
          EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5)
              << s.m << "x" << s.n << "x" << s.k << " ta " << ta << " tb " << tb << " beta " << beta;
          // And the bf16 GEMM stays within bf16 rounding of the fp32 one.
          Vec exact = c0;
          ref::matmul<double>(exact.data(), a.data(), b.data(), s.m, s.n, s.k, ta, tb, double(beta));
          EXPECT_LT(rel_err(to_f64(got.data(), got.size()), exact), 2e-2);
        }
  }
}

// The bf16-output GEMM: the exact product rounded once to bf16, so within half a bf16 ulp
// (2^-8 relative) plus the fp32 accumulation's error. Both the dispatched kernel and the AVX2
// floor (operands widened, sgemm, then rounded) are checked, whatever this CPU has.
TEST(KernelParity, MatmulBf16OutAllTransposes) {
  struct Shape { int64_t m, n, k; };
  using Fn = void (*)(uint16_t*, const uint16_t*, const uint16_t*, int64_t, int64_t, int64_t, bool, bool);
  const std::pair<const char*, Fn> impls[] = {{"dispatched", cpu.matmul_bf16_out}, {"avx2", cpu::matmul_bf16_out_widen}};
  std::vector<Shape> shapes = {{1, 1, 1}, {37, 19, 45}, {130, 67, 258}, {96, 200, 96}};
  for (auto [m, n, k] : env_shapes<3>("NT_TEST_MATMUL_SHAPES")) shapes.push_back({m, n, k});
  for (const auto& [name, fn] : impls)
    for (Shape s : shapes) {
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
          auto af = to_f32(randn(s.m * s.k, 83)), bf = to_f32(randn(s.k * s.n, 84));
          std::vector<uint16_t> ah(af.size()), bh(bf.size()), got(size_t(s.m * s.n));
          ref::to_bf16(ah.data(), af.data(), int64_t(af.size()));
          ref::to_bf16(bh.data(), bf.data(), int64_t(bf.size()));
          Vec want(size_t(s.m * s.n));
          ref::matmul_bf16<double>(want.data(), ah.data(), bh.data(), s.m, s.n, s.k, ta, tb, 0.0);
          fn(got.data(), ah.data(), bh.data(), s.m, s.n, s.k, ta, tb);
          double scale = 0;
          for (double w : want) scale = std::max(scale, std::abs(w));
          int bad = 0;
          for (size_t i = 0; i < want.size(); ++i)
            bad += std::abs(ref::from_bf16_1(got[i]) - want[i]) > std::ldexp(std::abs(want[i]), -8) + 1e-5 * scale;
          EXPECT_EQ(bad, 0) << name << " " << s.m << "x" << s.n << "x" << s.k << " ta " << ta << " tb " << tb;
        }
    }
}

// The bf16-output GEMM with the MLP's activation in its epilogue (KernelTable's optional
// matmul_bf16_out_relu2 and matmul_bf16_out_relu2_bwd, where the backend has them): the product
// within bf16 rounding of the double one, and the activation, forward or backward, exactly
// relu2_fwd_bf16 / relu2_bwd_bf16 of the product as matmul_bf16_out rounds it (the same GEMM).
// Shapes for our AVX-512-BF16 GEMM's paths (row tails, a column tail, one row block split by
// columns, several blocks a thread) and for those it declines (A transposed, k odd: composed).
TEST(KernelParity, MatmulBf16OutWithTheActivation) {
  const KernelTable& k = cpu;
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
    k.matmul_bf16_out(plain.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    int bad = 0;
    for (size_t i = 0; i < mn; ++i)
      bad += std::abs(ref::from_bf16_1(plain[i]) - exact[i]) > std::ldexp(std::abs(exact[i]), -8) + 1e-5 * scale;
    EXPECT_EQ(bad, 0) << what;
    // Forward: C as matmul_bf16_out writes it, and its activation.
    k.matmul_bf16_out_relu2(c.data(), act.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
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
    k.matmul_bf16_out_relu2_bwd(dinp.data(), x.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(values(dinp), values(want)) << what;
    k.matmul_bf16_out_relu2_bwd(x.data(), x.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb);
    EXPECT_EQ(values(x), values(want)) << what << " (dinp over inp)";
  }
  if (cpu_features().avx512bf16) {  // what our GEMM declines, it leaves untouched
    std::vector<uint16_t> a(64 * 64, 0x3f80), c(64 * 64, 0x1234);
    EXPECT_FALSE(cpu::gemm_rows_bf16_avx512(c.data(), nullptr, nullptr, a.data(), a.data(), 64, 64, 64, true, false));
    EXPECT_FALSE(cpu::gemm_rows_bf16_avx512(c.data(), nullptr, nullptr, a.data(), a.data(), 64, 64, 63, false, false));
    EXPECT_EQ(c, std::vector<uint16_t>(64 * 64, 0x1234));
  }
}

// Our fp32-output GEMM on the AVX-512-BF16 tile (matmul_bf16 with beta 0 or 1 where the CPU has
// it, no AMX) on the paths the shapes above do not reach: a C of 8 MiB and more written with
// streaming stores (aligned), the same C misaligned (plain stores), a row tail and a column tail
// at that size, and C += with C's lines fetched ahead; a long k summed in blocks (the last one
// short), with C = and C +=, where the units run along row blocks and along groups of panels
// (more columns than rows); against the double product of the same bf16 operands.
TEST(KernelParity, MatmulBf16OurF32GemmPaths) {
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "no AVX-512-BF16 on this CPU";
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
    ASSERT_TRUE(
        cpu::gemm_rows_f32_avx512(c.data() + cs.c_offset, a.data(), b.data(), cs.m, cs.n, cs.k, false, cs.tb, cs.add));
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
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "no AVX-512-BF16 on this CPU";
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
    ASSERT_TRUE(cpu::gemm_at_f32_avx512(c.data() + cs.c_offset, a.data(), b.data(), cs.m, cs.n, cs.k, cs.add)) << what;
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
    ASSERT_TRUE(cpu::gemm_at_f32_avx512(fused.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.add, true)) << what;
    ASSERT_TRUE(cpu::gemm_at_f32_avx512(composed.data(), a.data(), act.data(), cs.m, cs.n, cs.k, cs.add)) << what;
    EXPECT_EQ(fused, composed) << what << " relu2(B)";
  }
  std::vector<uint16_t> a(96 * 64, 0x3f80);
  std::vector<float> c(96 * 64, 3.0f);
  EXPECT_FALSE(cpu::gemm_at_f32_avx512(c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::gemm_at_f32_avx512(c.data(), a.data(), a.data(), 32, 96, 63, false));
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
  if (!cpu_features().amx_bf16) GTEST_SKIP() << "no AMX on this CPU (or NANOTRAIN_NO_AMX)";
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
        ASSERT_TRUE(cpu::matmul_bf16_amx(c.data(), cs.ldc, true, ah.data() + off, bh.data() + off, cs.m, cs.n, cs.k,
                                         cs.ta, cs.tb, 0.0f));
        for (int64_t i = 0; i < cs.m; ++i) {
          for (int64_t j = 0; j < cs.n; ++j) got[size_t(i * cs.n + j)] = ref::from_bf16_1(c[size_t(i * cs.ldc + j)]);
          for (int64_t j = cs.n; j < cs.ldc; ++j) ASSERT_EQ(c[size_t(i * cs.ldc + j)], 0x7fc1) << what;
        }
        EXPECT_LT(rel_err(got, want), 4e-3) << what;  // one bf16 rounding
      } else {
        Buffer<float> c(size_t(cs.m * cs.ldc));
        std::memcpy(c.data(), c0.data(), c0.size() * sizeof(float));
        ASSERT_TRUE(cpu::matmul_bf16_amx(c.data(), cs.ldc, false, ah.data() + off, bh.data() + off, cs.m, cs.n, cs.k,
                                         cs.ta, cs.tb, cs.beta));
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
  EXPECT_FALSE(cpu::matmul_bf16_amx(c.data(), 64, false, x.data(), x.data(), 64, 64, 64, true, true, 0.0f));
}

// B packed once (the output head's weights): against double on every transpose, tails of every
// dimension, odd k, one and several reduction chunks (k past 4096), A read in place and packed
// (rows too far apart), beta 0, 1 and 0.5, and bitwise equal to the same GEMM packing per call
// (AMX where that takes the same chunks, A read in place; our row GEMM on AVX-512-BF16).
TEST(KernelParity, MatmulBf16PackedB) {
  const KernelTable& k = cpu;
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
    Buffer<uint16_t> packed(size_t(k.packed_b_bf16_size(cs.n, cs.k)));
    std::fill_n(packed.data(), packed.size(), uint16_t(0x7fc1));  // a NaN: every element is written
    k.pack_b_bf16(packed.data(), bh.data(), cs.n, cs.k, cs.tb);
    Buffer<float> c(size_t(cs.m * cs.n));
    std::memcpy(c.data(), c0.data(), c0.size() * sizeof(float));
    k.matmul_bf16_packed_b(c.data(), ah.data(), packed.data(), cs.m, cs.n, cs.k, cs.ta, cs.beta);
    EXPECT_LT(rel_err(to_f64(c.data(), c.size()), want), 1e-5) << what;
    // A in place (aligned rows at most 32 KiB apart, gemm_bf16_amx.cc): the same chunks as
    // packing per call.
    if (cpu_features().amx_bf16 && !cs.ta && cs.k % 32 == 0 && cs.k * 2 <= (32 << 10)) {
      Buffer<float> c2(size_t(cs.m * cs.n));
      std::memcpy(c2.data(), c0.data(), c0.size() * sizeof(float));
      ASSERT_TRUE(
          cpu::matmul_bf16_amx(c2.data(), cs.n, false, ah.data(), bh.data(), cs.m, cs.n, cs.k, false, cs.tb, cs.beta));
      EXPECT_EQ(std::memcmp(c.data(), c2.data(), c.size() * sizeof(float)), 0) << what;
    }
    // Our row GEMM (gemm_rows_avx512.cc, AVX-512-BF16 without AMX) on the panels packed once:
    // bitwise what it computes packing them per call, where it takes the product.
    if (!cpu_features().amx_bf16 && cpu_features().avx512bf16 && !cs.ta && cs.k % 2 == 0 &&
        (cs.beta == 0.0f || cs.beta == 1.0f)) {
      Buffer<float> c2(size_t(cs.m * cs.n));
      std::memcpy(c2.data(), c0.data(), c0.size() * sizeof(float));
      ASSERT_TRUE(cpu::gemm_rows_f32_avx512(c2.data(), ah.data(), bh.data(), cs.m, cs.n, cs.k, false, cs.tb,
                                            cs.beta == 1.0f));
      EXPECT_EQ(std::memcmp(c.data(), c2.data(), c.size() * sizeof(float)), 0) << what;
    }
  }
}

// The product with the MLP's activation applied to one operand as it is read: against double on
// the activation written out (relu2_fwd_bf16's values), every transpose, either operand, shapes
// that compose (small) and that our AMX GEMM takes (m >= 1024; A^T B over 4096 and more); those
// also exactly equal to the AMX GEMM on the written-out activation, and without AMX the weight
// gradient's pattern (A^T B, relu2(B), beta 0 or 1) to our A^T B GEMM on it.
TEST(KernelParity, MatmulBf16Relu2ReadsTheActivation) {
  const KernelTable& k = cpu;
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
    k.matmul_bf16_relu2(got.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta, cs.relu2_a);
    if (cs.vs_double) {
      Vec want(c0.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = cs.beta * double(c0[i]);
      ref::matmul_bf16<double>(want.data(), ea, eb, cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
      EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what;
    }
    if (cpu_features().amx_bf16 && cs.m >= 512 && !(cs.ta && cs.tb)) {  // (both transposed: composed)
      std::vector<float> amx = c0;
      ASSERT_TRUE(cpu::matmul_bf16_amx(amx.data(), cs.n, false, ea, eb, cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta));
      EXPECT_EQ(got, amx) << what;
    }
    if (!cpu_features().amx_bf16 && cpu_features().avx512bf16 && cs.ta && !cs.tb && !cs.relu2_a &&
        (cs.beta == 0.0f || cs.beta == 1.0f)) {  // our A^T B GEMM on the activation written out
      std::vector<float> at = c0;
      ASSERT_TRUE(cpu::gemm_at_f32_avx512(at.data(), ea, eb, cs.m, cs.n, cs.k, cs.beta == 1.0f));
      EXPECT_EQ(got, at) << what;
    }
  }
}

// The fp32 product with the MLP's activation applied to one operand as it is read (where the
// backend has it): against double on the activation written out, every transpose, either operand,
// beta 0, 1 and 0.5, k odd; and bit for bit against our fp32 GEMM on the activation written out
// where that GEMM takes the product (the down product's pattern, A B^T with k >= n and m >= 2 n:
// a row tail inside the last row block, several row blocks, C += and C =).
TEST(KernelParity, MatmulRelu2ReadsTheActivation) {
  const KernelTable& k = cpu;
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
    k.matmul_relu2(got.data(), a.data(), b.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.beta, cs.relu2_a);
    Vec want(c0.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = cs.beta * double(c0[i]);
    const Vec da = to_f64(ea, size_t(cs.m * cs.k)), db = to_f64(eb, size_t(cs.k * cs.n));
    ref::matmul<double>(want.data(), da.data(), db.data(), cs.m, cs.n, cs.k, cs.ta, cs.tb, 1.0);
    EXPECT_LT(rel_err(to_f64(got.data(), got.size()), want), 1e-5) << what;
    if (cpu_features().avx512f && cs.relu2_a && !cs.ta && cs.tb && cs.k % 2 == 0 && cs.beta != 0.5f &&
        cs.k >= cs.n && cs.m >= 2 * cs.n) {
      std::vector<float> ours = c0;
      ASSERT_TRUE(cpu::sgemm_nt_avx512(ours.data(), ea, eb, cs.m, cs.n, cs.k, cs.beta == 1.0f)) << what;
      EXPECT_EQ(got, ours) << what;
    }
  }
}

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
// columns past n of a strided C stay untouched. Every variant this CPU can run (the AMX one
// on whole 16 x 16 x 32 tiles with every kind of remainder: rows, columns, pairs).
TEST(KernelParity, GemmVnniBf16Tile) {
  struct Shape { int64_t m, n, k2; };
  const CpuFeatures f = cpu_features();
  std::vector<std::pair<const char*, cpu::GemmVnniBf16>> impls = {{"portable", cpu::gemm_vnni_bf16_portable}};
  if (f.avx512f && f.avx512bw && f.avx512bf16) impls.emplace_back("avx512bf16", cpu::gemm_vnni_bf16_avx512);
  if (f.amx_bf16) impls.emplace_back("amx", cpu::gemm_vnni_bf16_amx);
  for (const auto& [name, fn] : impls)
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

// The fp32 register tile of the fp32 attention on AVX-512 (B in pairs along k, as the bf16 tile
// reads it), against double: strided operands, row and column tails, both accumulate modes; the
// columns past n of a strided C stay untouched.
TEST(KernelParity, GemmPairsF32Tile) {
  const CpuFeatures f = cpu_features();
  if (!(f.avx512f && f.avx512bw)) GTEST_SKIP() << "no AVX-512 on this CPU: the tile is not dispatched";
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
  const CpuFeatures f = cpu_features();
  if (!(f.avx512f && f.avx512bw)) GTEST_SKIP() << "no AVX-512 on this CPU: the GEMMs are not dispatched";
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
      case 't': ran = cpu::sgemm_nt_avx512(cc, af.data(), bf.data(), cs.m, cs.n, cs.k, cs.add); break;
      case 'n': ran = cpu::sgemm_nn_avx512(cc, af.data(), bf.data(), cs.m, cs.n, cs.k, cs.add); break;
      case 'a': ran = cpu::sgemm_at_avx512(cc, af.data(), bf.data(), cs.m, cs.n, cs.k, cs.add); break;
      default: ran = cpu::gram_f32_avx512(cc, af.data(), cs.m, cs.k); break;
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
  EXPECT_FALSE(cpu::sgemm_nt_avx512(c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::sgemm_nn_avx512(c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::sgemm_at_avx512(c.data(), a.data(), a.data(), 96, 32, 63, false));
  EXPECT_FALSE(cpu::gram_f32_avx512(c.data(), a.data(), 32, 63));
  EXPECT_EQ(c, std::vector<float>(96 * 32, 3.0f));
}

// Attention with bf16 products: against its executable spec (ref::attention_*_bf16, in double)
// to fp32-accumulation accuracy, and against the exact fp32-operand attention to bf16 accuracy.
// The dispatched kernels, the AVX2 floor's, and on an AMX CPU the AVX-512-BF16 ones as well.
// The spec rounds P and dS to bf16 from double values, the kernels from fp32 ones: where a value
// lies within fp32 error of a bf16 rounding midpoint the two round apart, one bf16 ulp (2^-8 of
// the element) on that element. Such flips come with size (~1 in 20,000 elements) and move an
// output by up to ~2^-8 of its scale when they hit a large P, as in the early rows of a causal
// head (measured: 2.4e-4 on O and 1.4e-3 on dQ at B 2, T 97, H 4, KVH 2, D 48). The bounds
// against the spec leave room for a few flips; a wrong mask, index or accumulation is O(1e-2)
// or more, which the bounds and the fp32 comparisons catch.
TEST(KernelParity, AttentionBf16) {
  struct Shape { int64_t B, T, H, KVH, D; };
  using Fwd = decltype(KernelTable::attention_fwd_bf16);
  using Bwd = decltype(KernelTable::attention_bwd_bf16);
  struct Impl { const char* name; Fwd fwd; Bwd bwd; };
  std::vector<Impl> impls = {{"dispatched", cpu.attention_fwd_bf16, cpu.attention_bwd_bf16},
                             {"avx2", cpu::attention_tiled_bf16_avx2.fwd, cpu::attention_tiled_bf16_avx2.bwd}};
  const CpuFeatures f = cpu_features();
  if (f.amx_bf16)  // the dispatched kernels are the AMX ones: check the AVX-512-BF16 ones too
    impls.push_back({"avx512bf16", cpu::attention_tiled_bf16_avx512.fwd, cpu::attention_tiled_bf16_avx512.bwd});
  std::vector<Shape> shapes = {{1, 1, 1, 1, 2},    {2, 7, 3, 1, 24},   {1, 33, 4, 2, 18}, {2, 70, 2, 2, 64},
                               {1, 150, 4, 2, 32}, {1, 129, 2, 1, 64}, {1, 20, 2, 2, 7},  {2, 40, 4, 2, 128},
                               {1, 35, 2, 2, 48},  {1, 900, 2, 1, 128}, {1, 1100, 1, 1, 72},  // several key spans; 64-row blocks
                               {3, 600, 1, 1, 112}};  // three tasks whose rows are not fetched ahead (over 512 KiB)
  for (auto [b, t, h, kvh, d] : env_shapes<5>("NT_TEST_ATTENTION_SHAPES")) shapes.push_back({b, t, h, kvh, d});
  for (const Impl& impl : impls)
    for (Shape s : shapes) {
      const int64_t nq = s.B * s.T * s.H * s.D, nk = s.B * s.T * s.KVH * s.D;
      Vec q = randn(nq, 50), k = randn(nk, 51), v = randn(nk, 52), dout = randn(nq, 53);
      auto make = [&](size_t n) { return Vec(n); };
      Vec out = make(size_t(nq)), lse = make(size_t(s.B * s.H * s.T)), dq = make(size_t(nq)), dk = make(size_t(nk)),
          dv = make(size_t(nk));
      Vec out32 = out, lse32 = lse, dq32 = dq, dk32 = dk, dv32 = dv;
      ref::attention_fwd_bf16<double>(out.data(), lse.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.KVH, s.D);
      ref::attention_bwd_bf16<double>(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                                      out.data(), lse.data(), s.B, s.T, s.H, s.KVH, s.D);
      ref::attention_fwd<double>(out32.data(), lse32.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.KVH, s.D);
      ref::attention_bwd<double>(dq32.data(), dk32.data(), dv32.data(), dout.data(), q.data(), k.data(), v.data(),
                                 out32.data(), lse32.data(), s.B, s.T, s.H, s.KVH, s.D);
      auto qf = to_f32(q), kf = to_f32(k), vf = to_f32(v), df = to_f32(dout), of = to_f32(out), lf = to_f32(lse);
      const std::string at = std::string(impl.name) + " T " + std::to_string(s.T) + " D " + std::to_string(s.D);
      // Into 64-byte aligned outputs (O, dQ, dK and dV go out in whole lines where their rows
      // allow) and one float off.
      for (int64_t off : {int64_t(0), int64_t(1)}) {
        const std::string at_off = at + " offset " + std::to_string(off);
        Buffer<float> got_o(size_t(nq + 1)), got_l(lse.size());
        impl.fwd(got_o.data() + off, got_l.data(), qf.data(), kf.data(), vf.data(), s.B, s.T, s.H, s.KVH, s.D);
        const auto o = to_f64(got_o.data() + off, size_t(nq)), l = to_f64(got_l.data(), lse.size());
        // (2e-3: the AVX-512 bf16 kernels' exp, good to 6e-5 before P is rounded to bf16, turns a few
        // of P's roundings the other way; measured up to 1.4e-3 where exp16 gave under 1e-3.)
        EXPECT_LT(rel_err(o, out), 2e-3) << at_off;
        EXPECT_LT(rel_err(l, lse), 1e-5) << at_off;
        EXPECT_LT(rel_err(o, out32), 1e-2) << at_off;
        // Backward from the reference's forward, so that only the backward is measured.
        Buffer<float> gq(size_t(nq + 1)), gk(size_t(nk + 1)), gv(size_t(nk + 1));
        for (Buffer<float>* g : {&gq, &gk, &gv}) std::fill_n(g->data(), g->size(), 7.f);
        impl.bwd(gq.data() + off, gk.data() + off, gv.data() + off, df.data(), qf.data(), kf.data(), vf.data(),
                 of.data(), lf.data(), s.B, s.T, s.H, s.KVH, s.D);
        const auto gdq = to_f64(gq.data() + off, size_t(nq)), gdk = to_f64(gk.data() + off, size_t(nk)),
                   gdv = to_f64(gv.data() + off, size_t(nk));
        EXPECT_LT(rel_err(gdq, dq), 4e-3) << at_off;
        EXPECT_LT(rel_err(gdk, dk), 4e-3) << at_off;
        EXPECT_LT(rel_err(gdv, dv), 1e-3) << at_off;
        if (s.T == 1) continue;  // one key: dq and dk are exactly 0 in fp32, rounding noise in bf16
        EXPECT_LT(rel_err(gdq, dq32), 3e-2) << at_off;
        EXPECT_LT(rel_err(gdk, dk32), 3e-2) << at_off;
        EXPECT_LT(rel_err(gdv, dv32), 1e-2) << at_off;
      }
    }
}

// The transpose of Muon's tall matrices: exact, on shapes with and without whole 8 x 8 blocks
// and 64-column tasks, on one thread (as Muon's side-by-side lists run it) and on all.
TEST(KernelParity, Transpose) {
  const int saved = omp_get_max_threads();
  for (int threads : {saved, 1}) {
    omp_set_num_threads(threads);
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {1, 9}, {9, 1}, {7, 13}, {8, 8}, {16, 64}, {65, 130},
                              {129, 70}, {300, 77}}) {
      const std::vector<float> src = to_f32(randn(rows * cols, 97));
      std::vector<float> want(src.size()), got(src.size() + 1, 7.f);
      ref::transpose(want.data(), src.data(), rows, cols);
      cpu.transpose(got.data(), src.data(), rows, cols);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << rows << "x" << cols << " threads " << threads;
      EXPECT_EQ(got.back(), 7.f) << "wrote past the end: " << rows << "x" << cols;
    }
  }
  omp_set_num_threads(saved);
}

// The mirror of symmetric products: below the diagonal becomes exactly the upper triangle's
// transpose, the upper triangle and the diagonal stay; sizes around the 32-row blocks and the
// 8 x 8 register blocks, on all threads and on one.
TEST(KernelParity, MirrorUpperTriangle) {
  const int saved = omp_get_max_threads();
  for (int threads : {saved, 1}) {
    omp_set_num_threads(threads);
    for (int64_t m : {1, 2, 7, 9, 31, 32, 33, 64, 100, 257}) {
      const std::vector<float> src = to_f32(randn(m * m, 98));
      std::vector<float> got(src.size() + 1, 7.f);
      std::copy(src.begin(), src.end(), got.begin());
      mirror_upper_triangle(got.data(), m);
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

// The backend's symmetric product of commuting symmetric matrices (Newton-Schulz's Gram chain)
// against the product in double: a = G, b = p(G) for a random symmetric G. Exactly symmetric,
// the same on all threads and on one, and sizes it does not take left alone.
TEST(KernelParity, SymmetricProductF32) {
  if (!cpu.symmetric_product_f32) GTEST_SKIP() << "the " << cpu.name << " backend composes the symmetric product";
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
      ASSERT_TRUE(cpu.symmetric_product_f32(got[threads - 1].data(), a.data(), b.data(), m)) << "m " << m;
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
    EXPECT_FALSE(cpu.symmetric_product_f32(c.data(), a.data(), a.data(), m)) << "m " << m;
    EXPECT_EQ(c, std::vector<float>(size_t(m * m), 3.f)) << "m " << m;
  }
}

// The optimizer's elementwise kernels: AdamW, axpby, sum of squares, Nesterov momentum.
TEST(KernelParity, OptimizerElementwise) {
  const int64_t n = 777;
  Vec p = randn(n, 63), gr = randn(n, 64), m = randn(n, 65, 0.1), v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::abs(randn(1, 100 + uint64_t(i))[0]) * 0.01;
  auto pf = to_f32(p), gf = to_f32(gr), mf = to_f32(m), vf = to_f32(v);
  ref::adamw_step<double>(p.data(), gr.data(), m.data(), v.data(), n, 0.01, 0.8, 0.95, 1e-10, 0.1, 0.2, 0.05);
  cpu.adamw_step(pf.data(), gf.data(), mf.data(), vf.data(), n, 0.01f, 0.8f, 0.95f, 1e-10f, 0.1f, 0.2f, 0.05f);
  EXPECT_LT(rel_err(to_f64(pf.data(), static_cast<size_t>(n)), p), 1e-6);
  EXPECT_LT(rel_err(to_f64(mf.data(), static_cast<size_t>(n)), m), 1e-6);
  EXPECT_LT(rel_err(to_f64(vf.data(), static_cast<size_t>(n)), v), 1e-6);
  ref::axpby<double>(p.data(), gr.data(), n, 0.3, -1.5);
  cpu.axpby(pf.data(), gf.data(), n, 0.3f, -1.5f);
  EXPECT_LT(rel_err(to_f64(pf.data(), static_cast<size_t>(n)), p), 1e-6);
  EXPECT_NEAR(cpu.sum_squares(pf.data(), n) / ref::sum_squares<double>(p.data(), n), 1.0, 1e-6);
  Vec u(static_cast<size_t>(n));
  std::vector<float> uf(static_cast<size_t>(n));
  ref::nesterov<double>(u.data(), m.data(), gr.data(), n, 0.95);
  cpu.nesterov(uf.data(), mf.data(), gf.data(), n, 0.95f);
  EXPECT_LT(rel_err(to_f64(mf.data(), static_cast<size_t>(n)), m), 1e-6);
  EXPECT_LT(rel_err(to_f64(uf.data(), static_cast<size_t>(n)), u), 1e-6);
}

// The row kernels (RMSNorm, the soft-capped cross-entropy, ReLU²) on (rows, width) shapes,
// fixed ones plus NT_TEST_ROW_SHAPES="rows,width;..." of the caller's choice; fp32 and the
// bf16-gradient cross-entropy (within half a bf16 ulp of the exact gradient plus the fp32
// pass's error; garbage in the output must be overwritten), dispatched and AVX2 floor.
TEST(KernelParity, RowKernelsOnShapes) {
  // (64, 1): a one-word vocabulary's loss and gradient are exactly 0, whatever the logit.
  std::vector<std::array<int64_t, 2>> shapes = {{1, 1},  {3, 2},     {9, 7},     {9, 15},  {9, 17},
                                                {9, 64}, {9, 129},   {13, 257},  {7, 143}, {31, 1000},
                                                {5, 8192 + 3}, {64, 1}};
  for (auto s : env_shapes<2>("NT_TEST_ROW_SHAPES")) shapes.push_back(s);
  for (auto [rows, width] : shapes) {
    const std::string at = std::to_string(rows) + "x" + std::to_string(width);
    const size_t n = size_t(rows * width);
    Vec x = randn(n, 90, 3.0), dy = randn(n, 91), dx0 = randn(n, 92);
    auto xf = to_f32(x), dyf = to_f32(dy);
    // RMSNorm forward and (accumulating) backward.
    Vec out(n), rstd(static_cast<size_t>(rows)), dx = dx0;
    ref::rmsnorm_fwd<double>(out.data(), rstd.data(), x.data(), rows, width, 1e-6);
    ref::rmsnorm_bwd<double>(dx.data(), dy.data(), out.data(), rstd.data(), rows, width, true);
    std::vector<float> of(n), rf(static_cast<size_t>(rows));
    auto dxf = to_f32(dx0);
    cpu.rmsnorm_fwd(of.data(), rf.data(), xf.data(), rows, width, 1e-6f);
    cpu.rmsnorm_bwd(dxf.data(), dyf.data(), of.data(), rf.data(), rows, width, true);
    EXPECT_LT(rel_err(to_f64(of.data(), n), out), 1e-6) << "rmsnorm fwd " << at;
    EXPECT_LT(rel_err(to_f64(dxf.data(), n), dx), 1e-5) << "rmsnorm bwd " << at;
    // Cross-entropy over a vocabulary of `width`, logits reaching well into the soft-cap; row 5
    // (where there is one) is ignored. Caps 15 (the model's) and 60 (past 43.5, exp(z - cap) can
    // fall below the exp's range: the kernels shift by the row's max instead).
    for (const double cap : {15.0, 60.0}) {
      const Vec logits = randn(n, 60, cap * 2.0 / 3.0);
      std::vector<int32_t> tg(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) tg[size_t(r)] = r == 5 ? -1 : int32_t((r * 37) % width);
      Vec g = logits, losses(static_cast<size_t>(rows));
      ref::softcap_xent<double>(g.data(), losses.data(), tg.data(), rows, width, cap, 0.5);
      double scale = 1e-30;
      for (double w : g) scale = std::max(scale, std::abs(w));
      using Xent = decltype(KernelTable::softcap_xent);
      for (const auto& [name, fn] : {std::pair<const char*, Xent>{"dispatched", cpu.softcap_xent},
                                     std::pair<const char*, Xent>{"avx2", cpu::softcap_xent}}) {
        auto lf = to_f32(logits);
        std::vector<float> lossf(static_cast<size_t>(rows));
        fn(lf.data(), lossf.data(), tg.data(), rows, width, float(cap), 0.5f);
        EXPECT_LT(rel_err(to_f64(lossf.data(), lossf.size()), losses), 1e-5)
            << name << " xent loss " << at << " cap " << cap;
        EXPECT_LT(rel_err(to_f64(lf.data(), n), g), 1e-5) << name << " xent grad " << at << " cap " << cap;
      }
      using XentBf16 = decltype(KernelTable::softcap_xent_bf16);
      for (const auto& [name, fn] : {std::pair<const char*, XentBf16>{"dispatched", cpu.softcap_xent_bf16},
                                     std::pair<const char*, XentBf16>{"avx2", cpu::softcap_xent_bf16_avx2}}) {
        auto lf = to_f32(logits);
        std::vector<float> lossf(static_cast<size_t>(rows));
        std::vector<uint16_t> gh(n, 0x7777);
        fn(lf.data(), lossf.data(), tg.data(), rows, width, float(cap), 0.5f, gh.data());
        EXPECT_LT(rel_err(to_f64(lossf.data(), lossf.size()), losses), 1e-5)
            << name << " xent bf16 loss " << at << " cap " << cap;
        int bad = 0;
        for (size_t i = 0; i < n; ++i)
          bad += std::abs(ref::from_bf16_1(gh[i]) - g[i]) > std::ldexp(std::abs(g[i]), -8) + 1e-5 * scale;
        EXPECT_EQ(bad, 0) << name << " xent bf16 grad " << at << " cap " << cap;
      }
    }
    // ReLU² over all n elements.
    Vec y(n), dr(n);
    ref::relu2_fwd<double>(y.data(), x.data(), int64_t(n));
    ref::relu2_bwd<double>(dr.data(), dy.data(), x.data(), int64_t(n));
    std::vector<float> yf(n), drf(n);
    cpu.relu2_fwd(yf.data(), xf.data(), int64_t(n));
    cpu.relu2_bwd(drf.data(), dyf.data(), xf.data(), int64_t(n));
    EXPECT_LT(rel_err(to_f64(yf.data(), n), y), 1e-6) << "relu2 fwd " << at;
    EXPECT_LT(rel_err(to_f64(drf.data(), n), dr), 1e-6) << "relu2 bwd " << at;
  }
}

// ---------------------------------------------------------------- conventions

// The kernels' fast paths assume Buffer's alignment (AMX tile rows, streaming stores): 64 bytes,
// and 2 MiB (a huge page) from 4 MiB up; every buffer starts zeroed, after a resize too.
TEST(KernelConvention, BuffersAreAlignedAndZeroed) {
  for (size_t n : {size_t(1), size_t(1000), Buffer<float>::kHugeFrom / 4 - 1, Buffer<float>::kHugeFrom / 4 + 5}) {
    Buffer<float> b(n);
    const auto at = reinterpret_cast<uintptr_t>(b.data());
    EXPECT_EQ(at % 64, 0u) << n;
    if (n * sizeof(float) >= Buffer<float>::kHugeFrom) {
      EXPECT_EQ(at % Buffer<float>::kHugePage, 0u) << n;
    }
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(b[i], 0.0f) << n;
    b[n - 1] = 3.0f;
    b.resize(n);
    EXPECT_EQ(b[n - 1], 0.0f) << n;
  }
}

TEST(KernelConvention, ParamGradsAccumulateActivationGradsOverwrite) {
  for (const KernelTable* kt : {&cpu_kernels(), &ref_kernels()}) {
    const int64_t n = 6, c = 5;
    std::vector<int32_t> ids = {0, 2, 2, 1, 3, 0};
    auto dout = to_f32(randn(n * c, 70));
    std::vector<float> dw(4 * c, 0.0f);
    kt->embed_bwd(dw.data(), dout.data(), ids.data(), n, c);
    auto once = dw;
    kt->embed_bwd(dw.data(), dout.data(), ids.data(), n, c);
    for (size_t i = 0; i < dw.size(); ++i) EXPECT_FLOAT_EQ(dw[i], 2 * once[i]) << kt->name;
    // rmsnorm_bwd without accumulate overwrites whatever was there.
    auto x = to_f32(randn(n * c, 71));
    std::vector<float> y(x.size()), rstd(static_cast<size_t>(n)), dx1(x.size(), 0.f), dx2(x.size(), 123.f);
    kt->rmsnorm_fwd(y.data(), rstd.data(), x.data(), n, c, 1e-6f);
    kt->rmsnorm_bwd(dx1.data(), dout.data(), y.data(), rstd.data(), n, c, false);
    kt->rmsnorm_bwd(dx2.data(), dout.data(), y.data(), rstd.data(), n, c, false);
    EXPECT_EQ(dx1, dx2) << kt->name;
  }
}

TEST(KernelTableTest, NoNullEntries) {
  for (const KernelTable* kt : {&cpu_kernels(), &ref_kernels()}) {
    const void* const* p = reinterpret_cast<const void* const*>(kt);
    // Every pointer up to the trailing properties.
    for (size_t i = 0; i < offsetof(KernelTable, bf16_matrix_tiles) / sizeof(void*); ++i)
      EXPECT_NE(p[i], nullptr) << kt->name << " " << i;
  }
}

TEST(KernelTableTest, UnknownDeviceIsAnError) {
  EXPECT_THROW(backend_for_device("tpu"), Error);
  EXPECT_THROW(backend_for_device("cuda"), Error);
  EXPECT_STREQ(backend_for_device("ref").kernels().name, "ref");
  EXPECT_STREQ(backend_for_device("cpu").kernels().name, cpu_kernels().name);
}

// cpu_features().amd_zen4 (the attention's prefetch hint follows it) against what the kernel
// says of the first CPU: vendor, family and the avx512f flag in /proc/cpuinfo.
TEST(CpuFeatures, Zen4AsProcCpuinfoSays) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, vendor, flags;
  int family = -1;
  while (std::getline(in, line) && !line.empty()) {  // the first processor's block
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value = line.substr(colon + 1);
    auto is = [&](const char* key) { return line.rfind(key, 0) == 0; };
    if (is("vendor_id")) vendor = value;
    if (is("cpu family")) family = std::stoi(value);
    if (is("flags")) flags = value + " ";
  }
  if (vendor.empty() || family < 0 || flags.empty()) GTEST_SKIP() << "/proc/cpuinfo without vendor, family or flags";
  const bool zen4 = vendor.find("AuthenticAMD") != std::string::npos && family == 0x19 &&
                    flags.find(" avx512f ") != std::string::npos;
  EXPECT_EQ(cpu_features().amd_zen4, zen4) << vendor << ", family " << family;
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
