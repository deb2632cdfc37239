// SPDX-License-Identifier: MIT
// Muon with its matrices shared among threads (each orthogonalising its own with one-thread
// kernels) against the same optimizer on one thread: the same updates up to summation order,
// fp32 and bf16 Newton-Schulz, and the split itself.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "backends/ref/ref_backend.h"
#include "backends/cpu/cpu_backend.h"
#include "core/buffer.h"
#include "backends/ref/ops_ref.h"
#include "core/rng.h"
#include "model/params.h"
#include "optim/optimizer.h"
#include "test_util.h"

namespace nt {
namespace {

ModelConfig config(int depth, int d_model) {
  ModelConfig c;
  c.depth = depth, c.d_model = d_model, c.n_head = d_model / 32, c.n_kv_head = d_model / 64, c.head_dim = 32;
  c.seq_len = 16, c.vocab_size = 64;
  return c;
}

// Three optimizer steps on fixed random gradients with `threads` OpenMP threads; returns each
// matrix's change and the number of lists Muon split its matrices into.
std::vector<std::vector<double>> updates(const ModelConfig& c, const KernelTable& k, int threads, bool bf16_ns,
                                         int* lists) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  ParamArena params(c), grads(c);
  init_params(params, 7);
  Rng r(9);
  for (size_t i = 0; i < grads.numel(); ++i) grads.data.data()[i] = float(r.normal());
  const std::vector<double> before = test::to_f64(params.data.data(), params.numel());
  OptimConfig oc;
  oc.resolve(c.d_model, c.tie_embeddings);
  oc.bf16_newton_schulz = bf16_ns;
  Optimizer opt(oc, params, k);
  *lists = opt.muon_threads();
  for (int s = 0; s < 3; ++s) opt.step(params, grads, 1.0);
  EXPECT_EQ(omp_get_max_threads(), threads) << "the one-thread setting of Muon's region leaked out of it";
  omp_set_num_threads(saved);
  std::vector<std::vector<double>> d;
  for (size_t i = 0; i < params.specs.size(); ++i) {
    if (params.specs[i].group != ParamGroup::kMatrix) continue;
    d.push_back(test::to_f64(params.tensor(i), size_t(params.specs[i].numel())));
    for (size_t j = 0; j < d.back().size(); ++j) d.back()[j] -= before[params.offsets[i] + j];
  }
  return d;
}

// The worst matrix's relative difference.
double worst(const std::vector<std::vector<double>>& got, const std::vector<std::vector<double>>& want) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) e = std::max(e, test::rel_err(got[i], want[i]));
  return e;
}

// The plain quintic iteration in double: X <- (a I + b A + c A A) X, A = X X^T, from X / |X|.
std::vector<double> newton_schulz_double(std::vector<double> x, int64_t m, int64_t n, int steps) {
  double norm = 0;
  for (double v : x) norm += v * v;
  for (double& v : x) v /= std::sqrt(norm) + 1e-7;
  std::vector<double> a(size_t(m * m)), b(size_t(m * m)), y(x.size());
  for (int it = 0; it < steps; ++it) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t l = 0; l < n; ++l) s += x[size_t(i * n + l)] * x[size_t(j * n + l)];
        a[size_t(i * m + j)] = s;
      }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t l = 0; l < m; ++l) s += a[size_t(i * m + l)] * a[size_t(l * m + j)];
        b[size_t(i * m + j)] = -4.7750 * a[size_t(i * m + j)] + 2.0315 * s + (i == j ? 3.4445 : 0.0);
      }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < m; ++l) s += b[size_t(i * m + l)] * x[size_t(l * n + j)];
        y[size_t(i * n + j)] = s;
      }
    x.swap(y);
  }
  return x;
}

// fp32 Newton-Schulz against the plain iteration in double, on square matrices (the plain
// iteration) and long ones (the Gram iteration), one and two threads, 0 to 5 steps; 130 rows
// take the matmul's Gram-triangle path too.
TEST(Optimizer, NewtonSchulzMatchesThePlainIterationInDouble) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2})
    for (auto [m, n] : {std::pair<int64_t, int64_t>{24, 24}, {24, 48}, {20, 67}, {130, 130}, {130, 300}})
      for (int steps : {0, 1, 2, 5}) {
        omp_set_num_threads(threads);
        const std::vector<double> x0 = test::randn(size_t(m * n), 31);
        const std::vector<double> want = newton_schulz_double(x0, m, n, steps);
        std::vector<float> x = test::to_f32(x0), y(x.size()), a(size_t(m * m)), b(size_t(m * m));
        newton_schulz(cpu_kernels(), test_ctx(), x.data(), y.data(), a.data(), b.data(), m, n, steps);
        // Measured: the plain iteration 0.7-1.5e-6, the Gram iteration 2.1-2.3e-5 (its product
        // of polynomials has no self-correction); a wrong or missing product is O(1).
        const double bound = newton_schulz_on_gram(m, n) ? 6e-5 : 5e-6;
        EXPECT_LT(test::rel_err(test::to_f64(x.data(), x.size()), want), bound)
            << m << " x " << n << ", " << steps << " steps, " << threads << " threads"
            << (newton_schulz_on_gram(m, n) ? " (Gram iteration)" : "");
      }
  omp_set_num_threads(saved);
  // The FLOP count: fewer on the Gram path than the plain iteration's, none without steps.
  const double plain = 5 * (4.0 * 384 * 384 * 1536 + 2.0 * 384 * 384 * 384);
  EXPECT_LT(newton_schulz_flops(384, 1536, 5), 0.65 * plain);
  EXPECT_EQ(newton_schulz_flops(384, 384, 5), 5 * 6.0 * 384 * 384 * 384);
  EXPECT_EQ(newton_schulz_flops(384, 1536, 0), 0.0);
}

// bf16 Newton-Schulz against the plain iteration in double: the plain bf16 iteration on square
// matrices, the Gram one (its G chain in fp32) on long ones, which lands closer. Measured here at
// 5 steps: plain 1.4-2.8 %, Gram 0.8-1.3 % (Gram with its chain in bf16 too: 6-70 %); a wrong or
// missing product is O(1).
TEST(Optimizer, Bf16NewtonSchulzMatchesThePlainIterationInDouble) {
  // Both choices for long matrices, whatever this CPU has: the Gram iteration, and the plain one
  // that a backend with bf16 matrix tiles runs. One thread takes the symmetric products' triangles.
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2})
    for (bool tiles : {false, true})
      for (auto [m, n] : {std::pair<int64_t, int64_t>{40, 40}, {130, 130}, {40, 100}, {130, 300}})
        for (int steps : {1, 2, 5}) {
          omp_set_num_threads(threads);
          const std::vector<double> x0 = test::randn(size_t(m * n), 32);
          const std::vector<double> want = newton_schulz_double(x0, m, n, steps);
          std::vector<float> x = test::to_f32(x0), a(size_t(m * m)), b(size_t(m * m));
          KernelTable k = cpu_kernels();
          k.bf16_matrix_tiles = tiles;
          NewtonSchulzBf16 ns;
          ns.run(k, test_ctx(), x.data(), a.data(), b.data(), m, n, steps);
          const bool gram = newton_schulz_bf16_on_gram(k, m, n);
          EXPECT_EQ(gram, !tiles && n >= 2 * m);
          EXPECT_LT(test::rel_err(test::to_f64(x.data(), x.size()), want), gram ? 2e-2 : 4e-2)
              << m << " x " << n << ", " << steps << " steps, " << threads << " threads"
              << (gram ? " (Gram iteration)" : "");
        }
  omp_set_num_threads(saved);
}

// The Gram iteration's products of commuting symmetric matrices (P G, P Q) against the whole
// product in double, on one thread (the upper triangle by block rows, spread out and mirrored)
// and two (the whole product), on sizes that split unevenly into block rows. The inputs are
// G = S + S^T and P = I + G / 4 + G G / 16, which commute. bf16 rounds P and G, whose rounded
// copies commute only to bf16 precision, hence its looser bound; a block row missing, misplaced
// or not mirrored is O(1).
TEST(Optimizer, SymmetricProductMatchesTheWholeProduct) {
  const KernelTable& k = cpu_kernels();
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2})
    for (int64_t m : {1, 5, 37, 130, 257}) {
      omp_set_num_threads(threads);
      const std::vector<double> s = test::randn(size_t(m * m), 40, 0.5 / std::sqrt(double(m)));
      std::vector<double> g(size_t(m * m)), p(size_t(m * m)), want(size_t(m * m));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) g[i * m + j] = s[i * m + j] + s[j * m + i];
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double gg = 0;
          for (int64_t l = 0; l < m; ++l) gg += g[i * m + l] * g[l * m + j];
          p[i * m + j] = (i == j ? 1.0 : 0.0) + g[i * m + j] / 4 + gg / 16;
        }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double acc = 0;
          for (int64_t l = 0; l < m; ++l) acc += p[i * m + l] * g[l * m + j];
          want[i * m + j] = acc;
        }
      const std::vector<float> pf = test::to_f32(p), gf = test::to_f32(g);
      std::vector<float> c(size_t(m * m), -7.0f);
      symmetric_product(k, test_ctx(), c.data(), pf.data(), gf.data(), m);
      EXPECT_LT(test::rel_err(test::to_f64(c.data(), c.size()), want), 1e-5) << "fp32, m " << m << ", " << threads
                                                                              << " threads";
      std::vector<uint16_t> ph(pf.size()), gh(gf.size());
      ref::to_bf16(ph.data(), pf.data(), m * m);
      ref::to_bf16(gh.data(), gf.data(), m * m);
      std::fill(c.begin(), c.end(), -7.0f);
      symmetric_product_bf16(k, test_ctx(), c.data(), ph.data(), gh.data(), m);
      EXPECT_LT(test::rel_err(test::to_f64(c.data(), c.size()), want), 1.5e-2) << "bf16, m " << m << ", " << threads
                                                                                << " threads";
      if (threads == 1) {  // mirrored: exactly symmetric
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < i; ++j) ASSERT_EQ(c[i * m + j], c[j * m + i]) << i << ", " << j;
      }
    }
  omp_set_num_threads(saved);
}

// The backend's one-op bf16 Newton-Schulz (on AMX tiles or the AVX-512-BF16 tile) against the
// iteration NewtonSchulzBf16 composes from the table's GEMMs, which rounds at the same points,
// so the two differ only by summation order, far less than either differs from the exact
// iteration. On shapes it takes (whole multiples of 32, square and long; long ones
// on the Gram matrix where NewtonSchulzBf16 iterates them so, which the AMX op leaves to the
// composed version) and ones it does not, one and two threads: the op's blocks each run on one
// thread, so the result does not depend on the thread count; and a tall matrix handed over as
// stored gives the transpose.
TEST(Optimizer, OneOpBf16NewtonSchulzMatchesTheComposedIteration) {
  const KernelTable& k = cpu_kernels();
  if (!k.newton_schulz_bf16) GTEST_SKIP() << "the " << k.name << " backend composes Newton-Schulz from GEMMs";
  KernelTable composed = k;
  composed.newton_schulz_bf16 = nullptr;
  const int saved = omp_get_max_threads();
  for (auto [m, n] : {std::pair<int64_t, int64_t>{32, 32}, {64, 96}, {96, 320}, {160, 160}, {128, 512}})
    for (int steps : {1, 2, 5}) {
      const bool gram = newton_schulz_bf16_on_gram(k, m, n);
      if (gram && k.bf16_matrix_tiles) continue;  // the AMX op iterates plainly only
      const std::vector<double> x0 = test::randn(size_t(m * n), 33);
      const std::vector<double> exact = newton_schulz_double(x0, m, n, steps);
      std::vector<float> a(size_t(m * m)), b(size_t(m * m)), want = test::to_f32(x0);
      NewtonSchulzBf16 reference;
      reference.run(composed, test_ctx(), want.data(), a.data(), b.data(), m, n, steps);
      std::vector<float> got[2];
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        std::vector<float>& x = got[threads - 1];
        x = test::to_f32(x0);
        NewtonSchulzBf16 ns;
        ns.run(k, test_ctx(), x.data(), a.data(), b.data(), m, n, steps);
      }
      omp_set_num_threads(saved);
      // Measured on the AVX-512-BF16 tile: bit-identical without the Gram matrix; on the Gram
      // path 0, 2.9e-4 and 6.1e-3 after 1, 2 and 5 steps (the iteration amplifies the summation
      // order's difference). Bounds about 10x the 2-step figure; the 5-step Gram case keeps 1e-2.
      const double bound = gram && steps == 5 ? 1e-2 : 3e-3;
      EXPECT_LT(test::rel_err(test::to_f64(got[0].data(), got[0].size()), test::to_f64(want.data(), want.size())), bound)
          << m << " x " << n << ", " << steps << " steps";
      EXPECT_LT(test::rel_err(test::to_f64(got[0].data(), got[0].size()), exact), gram ? 2e-2 : 4e-2)
          << m << " x " << n;
      EXPECT_EQ(got[0], got[1]) << m << " x " << n << ": one thread and two differ";
      // A tall matrix given as it is stored, (n, m): the same result, transposed.
      std::vector<float> xt(size_t(m * n));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) xt[size_t(j * m + i)] = float(x0[size_t(i * n + j)]);
      NewtonSchulzBf16 ns;
      ASSERT_TRUE(ns.run_one_op(k, test_ctx(), xt.data(), true, a.data(), b.data(), m, n, steps)) << m << " x " << n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          ASSERT_EQ(xt[size_t(j * m + i)], got[0][size_t(i * n + j)])
              << m << " x " << n << " transposed, " << i << ", " << j;
    }
  // Shapes the op does not take (and the Gram iteration of a matrix less than twice as long as
  // it is high): it says so and leaves x alone (NewtonSchulzBf16 then composes).
  for (auto [m, n, gram] : {std::tuple<int64_t, int64_t, bool>{40, 80, false}, {48, 64, false}, {64, 32, false},
                            {32, 100, false}, {64, 96, true}, {64, 64, true}}) {
    std::vector<float> x(size_t(m * n), 0.5f), g(size_t(m * m)), g2(size_t(m * m));
    Buffer<uint16_t> work(size_t(newton_schulz_bf16_work(m, n)));
    EXPECT_FALSE(
        k.newton_schulz_bf16(test_ctx(), x.data(), false, 1.0f, g.data(), g2.data(), work.data(), m, n, 5, gram))
        << m << " x " << n << (gram ? " (Gram)" : "");
    EXPECT_EQ(x, std::vector<float>(size_t(m * n), 0.5f));
  }
}

TEST(Optimizer, MatricesSharedAmongThreadsGiveTheOneThreadUpdate) {
  for (const ModelConfig& c : {config(2, 64), config(3, 128)})
    for (bool bf16_ns : {false, true}) {
      int one = 0, two = 0;
      const auto want = updates(c, cpu_kernels(), 1, bf16_ns, &one);
      const auto got = updates(c, cpu_kernels(), 2, bf16_ns, &two);
      EXPECT_EQ(one, 1);
      EXPECT_EQ(two, 2) << "the matrices of depth " << c.depth << " split evenly between two threads";
      // Summation orders may differ with the GEMMs' thread counts.
      EXPECT_LT(worst(got, want), 1e-5)
          << "depth " << c.depth << (bf16_ns ? " bf16" : " fp32") << " Newton-Schulz";
    }
}

TEST(Optimizer, ReferenceBackendSharesMatricesToo) {
  int one = 0, two = 0;
  const ModelConfig c = config(2, 64);
  const auto want = updates(c, ref_kernels(), 1, false, &one);
  const auto got = updates(c, ref_kernels(), 2, false, &two);
  EXPECT_EQ(two, 2);
  EXPECT_LT(worst(got, want), 1e-5);
}

TEST(Optimizer, UnevenSplitsRunOneMatrixAtATime) {
  // One layer has six matrices of three shapes; sixteen threads cannot share them within 10 %.
  int lists = 0;
  updates(config(1, 64), cpu_kernels(), 16, false, &lists);
  EXPECT_EQ(lists, 1);
}

}  // namespace
}  // namespace nt
