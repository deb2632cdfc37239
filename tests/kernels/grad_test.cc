// SPDX-License-Identifier: MIT
// Each op's reference backward against central finite differences of its reference forward,
// in double (the reference is the spec the CPU tables are checked against).
#include <gtest/gtest.h>

#include <functional>

#include "backends/ref/ops_ref.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::randn;
using test::rel_err;
using test::rope_tables;
using Vec = std::vector<double>;

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

// Awkward: T = 7, D = 24, three query heads sharing one key/value head; causal and in sliding
// windows of 3 keys before the query and of none (each query sees only itself).
TEST(KernelGrad, AttentionGroupedQuery) {
  const int64_t B = 2, T = 7, H = 3, KVH = 1, D = 24;
  Vec q = randn(B * T * H * D, 5), k = randn(B * T * KVH * D, 6), v = randn(B * T * KVH * D, 7);
  Vec w = randn(B * T * H * D, 8);
  for (int64_t W : {kFullWindow, int64_t(3), int64_t(0)}) {
    auto fwd = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
      Vec out(static_cast<size_t>(B * T * H * D)), lse(static_cast<size_t>(B * H * T));
      ref::attention_fwd<double>(out.data(), lse.data(), qq.data(), kk.data(), vv.data(), B, T, H, KVH, D, W);
      return out;
    };
    Vec out(static_cast<size_t>(B * T * H * D)), lse(static_cast<size_t>(B * H * T));
    ref::attention_fwd<double>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, KVH, D, W);
    Vec dq(q.size()), dk(k.size()), dv(v.size());
    ref::attention_bwd<double>(dq.data(), dk.data(), dv.data(), w.data(), q.data(), k.data(), v.data(), out.data(),
                               lse.data(), B, T, H, KVH, D, W);
    const Vec nq = numeric_grad(q, [&](const Vec& x) { return fwd(x, k, v); }, w);
    const Vec nk = numeric_grad(k, [&](const Vec& x) { return fwd(q, x, v); }, w);
    if (W == 0) {  // one key a query: the output is v, whatever q and k; their gradients are 0
      const Vec zeros(q.size());
      EXPECT_EQ(rel_err(dq, zeros), 0.0);
      EXPECT_EQ(rel_err(dk, Vec(k.size())), 0.0);
      for (double g : nq) EXPECT_LT(std::abs(g), 1e-8);
      for (double g : nk) EXPECT_LT(std::abs(g), 1e-8);
    } else {
      EXPECT_LT(rel_err(dq, nq), 1e-7) << "W " << W;
      EXPECT_LT(rel_err(dk, nk), 1e-7) << "W " << W;
    }
    EXPECT_LT(rel_err(dv, numeric_grad(v, [&](const Vec& x) { return fwd(q, k, x); }, w)), 1e-7) << "W " << W;
  }
}

// A sliding window changes the gradients (a window that is ignored would pass the check above).
TEST(KernelGrad, AttentionWindowChangesTheGradient) {
  const int64_t B = 1, T = 9, H = 2, KVH = 2, D = 8;
  Vec q = randn(B * T * H * D, 15), k = randn(B * T * KVH * D, 16), v = randn(B * T * KVH * D, 17);
  Vec w = randn(B * T * H * D, 18);
  auto grads = [&](int64_t W) {
    Vec out(q.size()), lse(static_cast<size_t>(B * H * T)), dq(q.size()), dk(k.size()), dv(v.size());
    ref::attention_fwd<double>(out.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, KVH, D, W);
    ref::attention_bwd<double>(dq.data(), dk.data(), dv.data(), w.data(), q.data(), k.data(), v.data(), out.data(),
                               lse.data(), B, T, H, KVH, D, W);
    return dk;
  };
  EXPECT_GT(rel_err(grads(2), grads(kFullWindow)), 1e-2);
  EXPECT_EQ(rel_err(grads(T - 1), grads(kFullWindow)), 0.0);
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

TEST(KernelGrad, Gelu) {
  Vec x = randn(50, 12, 2.0), w = randn(50, 13);
  auto f = [&](const Vec& in) {
    Vec y(in.size());
    ref::gelu_fwd<double>(y.data(), in.data(), int64_t(in.size()));
    return y;
  };
  Vec dx(x.size());
  ref::gelu_bwd<double>(dx.data(), w.data(), x.data(), int64_t(x.size()));
  EXPECT_LT(rel_err(dx, numeric_grad(x, f, w)), 1e-7);
}

TEST(KernelGrad, Swiglu) {
  const int64_t rows = 3, f = 7;
  Vec x = randn(rows * 2 * f, 14, 2.0), w = randn(rows * f, 15);
  auto fwd = [&](const Vec& in) {
    Vec y(static_cast<size_t>(rows * f));
    ref::swiglu_fwd<double>(y.data(), in.data(), rows, f);
    return y;
  };
  Vec dx(x.size());
  ref::swiglu_bwd<double>(dx.data(), w.data(), x.data(), rows, f);
  EXPECT_LT(rel_err(dx, numeric_grad(x, fwd, w)), 1e-7);
}

// Without the cap (0): the plain cross-entropy's gradient.
TEST(KernelGrad, UncappedCrossEntropy) {
  const int64_t rows = 3, V = 9;
  Vec l = randn(rows * V, 16, 5.0);
  std::vector<int32_t> tg = {2, 8, -1};
  Vec w(static_cast<size_t>(rows), 1.0);
  auto f = [&](const Vec& in) {
    Vec z = in, losses(static_cast<size_t>(rows));
    ref::softcap_xent<double>(z.data(), losses.data(), tg.data(), rows, V, 0.0, 0.0);
    return losses;
  };
  Vec g = l, losses(static_cast<size_t>(rows));
  ref::softcap_xent<double>(g.data(), losses.data(), tg.data(), rows, V, 0.0, 1.0);
  EXPECT_LT(rel_err(g, numeric_grad(l, f, w)), 1e-7);
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

}  // namespace
}  // namespace nt
