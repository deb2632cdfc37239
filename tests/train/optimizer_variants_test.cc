// SPDX-License-Identifier: MIT
// Muon's variants one at a time against what they promise: Polar Express lands every singular
// value in its band (the quintic does not), MuonEq equalises row norms, NorMuon equalises rows
// (or columns) and keeps the norm, cautious decay skips the weights the update shrinks, the
// momentum schedule's values; NorMuon's state survives a checkpoint bit for bit; and the flags'
// errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/rng.h"
#include "model/params.h"
#include "optim/muon_variants.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "test_util.h"
#include "train/checkpoint.h"

namespace nt {
namespace {

// A Householder reflector I - 2 v v^T / v^T v of size n (symmetric and orthogonal), in double.
std::vector<double> householder(int64_t n, uint64_t seed) {
  const std::vector<double> v = test::randn(size_t(n), seed);
  double vv = 0;
  for (double x : v) vv += x * x;
  std::vector<double> h(size_t(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) h[size_t(i * n + j)] = (i == j ? 1.0 : 0.0) - 2 * v[size_t(i)] * v[size_t(j)] / vv;
  return h;
}

// c (m, n) = a (m, k) b (k, n), in double.
std::vector<double> mul(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<double> c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += a[size_t(i * k + l)] * b[size_t(l * n + j)];
  return c;
}

// X = H1 [diag(s) 0] H2 with singular values s from 1 down to 1e-2 (geometric): after the
// Frobenius normalisation they span [~5e-3, ~0.5], inside Polar Express's design interval. The
// iteration's output, rotated back by H1 and H2, must be diagonal with entries f(sigma), where f
// composes the scalar polynomials; returns that diagonal's worst deviation from f (computed in
// double) and its range.
struct Spectrum {
  double worst_off_f = 0, lo = 1e9, hi = 0, off_diagonal = 0;
};
Spectrum orthogonalised_spectrum(int64_t m, int64_t n, NsCoeffs coeffs, bool bf16) {
  const std::vector<double> h1 = householder(m, 1), h2 = householder(n, 2);
  std::vector<double> s(static_cast<size_t>(m)), d(size_t(m * n), 0.0);
  double norm = 0;
  for (int64_t i = 0; i < m; ++i) {
    s[size_t(i)] = std::pow(1e-2, double(i) / double(m - 1));
    d[size_t(i * n + i)] = s[size_t(i)];
    norm += s[size_t(i)] * s[size_t(i)];
  }
  const std::vector<double> x0 = mul(mul(h1, d, m, m, n), h2, m, n, n);
  std::vector<float> x = test::to_f32(x0), y(x.size()), a(size_t(m * m)), b(size_t(m * m));
  if (bf16) {
    NewtonSchulzBf16 ns;
    ns.run(cpu_kernels(), test_ctx(), x.data(), a.data(), b.data(), m, n, 5, coeffs);
  } else {
    newton_schulz(cpu_kernels(), test_ctx(), x.data(), y.data(), a.data(), b.data(), m, n, 5, coeffs);
  }
  const std::vector<double> back = mul(mul(h1, test::to_f64(x.data(), x.size()), m, m, n), h2, m, n, n);
  Spectrum r;
  const double scale = double(ns_norm_scale(coeffs, std::sqrt(norm)));
  for (int64_t i = 0; i < m; ++i) {
    double f = s[size_t(i)] * scale;
    for (int it = 0; it < 5; ++it) {
      const NsPoly p = ns_poly(coeffs, it);
      f = p.a * f + p.b * f * f * f + p.c * f * f * f * f * f;
    }
    const double got = back[size_t(i * n + i)];
    r.worst_off_f = std::max(r.worst_off_f, std::abs(got - f));
    r.lo = std::min(r.lo, got), r.hi = std::max(r.hi, got);
    for (int64_t j = 0; j < n; ++j)
      if (j != i) r.off_diagonal = std::max(r.off_diagonal, std::abs(back[size_t(i * n + j)]));
  }
  return r;
}

TEST(MuonVariants, PolarExpressLandsSingularValuesInItsBand) {
  // Square, long (the Gram iteration) and long but under 2x (the plain one).
  for (auto [m, n] : {std::pair<int64_t, int64_t>{24, 24}, {24, 64}, {20, 30}}) {
    // Designed for [1e-3, 1] / 1.01: every value ends in [0.853, 1.142] in exact arithmetic.
    const Spectrum pe = orthogonalised_spectrum(m, n, NsCoeffs::kPolarExpress, false);
    EXPECT_GE(pe.lo, 0.85) << m << " x " << n;
    EXPECT_LE(pe.hi, 1.15) << m << " x " << n;
    EXPECT_LT(pe.worst_off_f, 2e-4) << m << " x " << n << ": not the composed polynomials";
    EXPECT_LT(pe.off_diagonal, 2e-4) << m << " x " << n;
    // The quintic leaves the small singular values far below that band after five steps.
    const Spectrum q = orthogonalised_spectrum(m, n, NsCoeffs::kQuintic, false);
    EXPECT_LT(q.lo, 0.8) << m << " x " << n;
    EXPECT_LT(q.worst_off_f, 2e-4) << m << " x " << n;
    // bf16 GEMMs: rounding X to bf16 moves the smallest singular values (5e-3 of the top) by
    // about as much as they are, so the values no longer match f one for one (measured up to
    // 0.24 off), but every one still lands in the band, and the quintic's still do not.
    const Spectrum b = orthogonalised_spectrum(m, n, NsCoeffs::kPolarExpress, true);
    EXPECT_GE(b.lo, 0.8) << m << " x " << n << " bf16";
    EXPECT_LE(b.hi, 1.2) << m << " x " << n << " bf16";
    EXPECT_LT(orthogonalised_spectrum(m, n, NsCoeffs::kQuintic, true).lo, 0.8) << m << " x " << n << " bf16";
  }
  EXPECT_EQ(ns_poly(NsCoeffs::kQuintic, 3).a, kNewtonSchulzA);
  EXPECT_NE(ns_poly(NsCoeffs::kPolarExpress, 0).a, ns_poly(NsCoeffs::kPolarExpress, 1).a);
}

TEST(MuonVariants, MuonEqGivesEveryRowTheMeanRowNorm) {
  const int64_t rows = 7, cols = 13;
  std::vector<double> x0 = test::randn(size_t(rows * cols), 3);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) x0[size_t(i * cols + j)] *= std::pow(3.0, double(i));  // rows 1 to 729
  double total = 0;
  for (double v : x0) total += v * v;
  const double target = std::sqrt(total / double(rows));
  std::vector<float> x = test::to_f32(x0);
  muon_row_equilibrate(x.data(), rows, cols, test_ctx().threads());
  for (int64_t i = 0; i < rows; ++i) {
    double nn = 0;
    for (int64_t j = 0; j < cols; ++j) nn += double(x[size_t(i * cols + j)]) * x[size_t(i * cols + j)];
    EXPECT_NEAR(std::sqrt(nn) / target, 1.0, 1e-6) << "row " << i;
    const double ratio = x[size_t(i * cols)] / x0[size_t(i * cols)];  // each row only scaled
    EXPECT_GT(ratio, 0);
    for (int64_t j = 0; j < cols; ++j)
      EXPECT_NEAR(x[size_t(i * cols + j)] / x0[size_t(i * cols + j)], ratio, 1e-5 * ratio);
  }
  std::vector<float> zero(size_t(rows * cols), 0.0f);
  muon_row_equilibrate(zero.data(), rows, cols, test_ctx().threads());
  for (float v : zero) EXPECT_EQ(v, 0.0f);  // no division by zero
}

// From a zero state, v = (1 - beta2) x mean square, so every row (tall or square) or column
// (wide) comes out with the same norm, and the whole keeps its norm.
TEST(MuonVariants, NorMuonEqualisesTheSmallerSideAndKeepsTheNorm) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{12, 5}, {5, 12}, {6, 6}}) {
    const bool per_row = rows >= cols;
    std::vector<double> x0 = test::randn(size_t(rows * cols), 4);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) x0[size_t(i * cols + j)] *= 1.0 + double(per_row ? i : j);
    std::vector<float> x = test::to_f32(x0), v(size_t(normuon_state_size(rows, cols)), 0.0f);
    normuon_normalize(x.data(), v.data(), rows, cols, 0.9f, test_ctx().threads());
    double before = 0, after = 0;
    std::vector<double> side(v.size(), 0.0), side0(v.size(), 0.0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t k = size_t(per_row ? i : j), e = size_t(i * cols + j);
        side[k] += double(x[e]) * x[e], side0[k] += x0[e] * x0[e];
        before += x0[e] * x0[e], after += double(x[e]) * x[e];
      }
    EXPECT_NEAR(after / before, 1.0, 1e-5) << rows << " x " << cols;
    for (size_t k = 0; k < side.size(); ++k) {
      EXPECT_NEAR(side[k] / side[0], 1.0, 1e-5) << rows << " x " << cols << ", " << k;
      EXPECT_NEAR(v[k] / (0.1 * side0[k] / double(per_row ? cols : rows)), 1.0, 1e-5);
    }
  }
}

TEST(MuonVariants, CautiousDecaySkipsWeightsTheUpdateShrinks) {
  const std::vector<float> u = {0.5f, -0.5f, 0.5f, -0.5f, 0.0f}, p0 = {2.0f, 2.0f, -2.0f, -2.0f, 1.0f};
  const float lr = 0.1f, wd = 0.3f;
  for (bool cautious : {true, false}) {
    std::vector<float> p = p0;
    muon_apply(p.data(), u.data(), int64_t(p.size()), lr, wd, cautious, test_ctx().threads());
    for (size_t i = 0; i < p.size(); ++i) {
      const bool agree = u[i] * p0[i] >= 0;  // the update moves the weight towards zero: decay
      const float want = p0[i] - lr * u[i] - (agree || !cautious ? lr * wd * p0[i] : 0.0f);
      EXPECT_FLOAT_EQ(p[i], want) << i << (cautious ? " cautious" : " plain");
    }
  }
}

TEST(MuonVariants, MomentumAndDecaySchedules) {
  OptimConfig c;
  c.momentum = 0.97, c.muon_momentum_warmup = 400, c.muon_momentum_final = 0.9;
  EXPECT_DOUBLE_EQ(c.muon_momentum_at(0, 0), 0.85);
  EXPECT_DOUBLE_EQ(c.muon_momentum_at(200, 0), 0.91);
  EXPECT_DOUBLE_EQ(c.muon_momentum_at(400, 0), 0.97);
  EXPECT_DOUBLE_EQ(c.muon_momentum_at(1000, 0.5), 0.935);
  EXPECT_DOUBLE_EQ(c.muon_momentum_at(1000, 1.0), 0.9);
  OptimConfig base;  // no warm-up or warm-down: the momentum throughout
  EXPECT_DOUBLE_EQ(base.muon_momentum_at(0, 0.7), 0.95);
  c.muon_wd = 0.2;
  EXPECT_DOUBLE_EQ(c.muon_wd_at(0), 0.2);
  EXPECT_NEAR(c.muon_wd_at(0.5), 0.1, 1e-15);
  EXPECT_NEAR(c.muon_wd_at(1), 0.0, 1e-15);
  c.muon_wd_schedule = "constant";
  EXPECT_DOUBLE_EQ(c.muon_wd_at(0.9), 0.2);
}

// The batch-size schedule: from the start fraction, linear to the full batch over the ramp, in
// whole micro-batches (at least one).
TEST(MuonVariants, BatchSizeScheduleRampsInMicroBatches) {
  Schedule s;
  EXPECT_EQ(s.micro_batches(0.0, 8), 8);  // the default: the full batch throughout
  s.batch_start_frac = 0.25, s.batch_ramp_frac = 0.5;
  EXPECT_EQ(s.micro_batches(0.0, 8), 2);
  EXPECT_EQ(s.micro_batches(0.25, 8), 5);  // 0.625 of 8
  EXPECT_EQ(s.micro_batches(0.5, 8), 8);
  EXPECT_EQ(s.micro_batches(0.9, 8), 8);
  EXPECT_EQ(s.micro_batches(0.0, 2), 1);  // never below one
  s.batch_start_frac = 0;
  EXPECT_EQ(test::error_of([&] { s.validate(); }), "--batch-start-frac 0: must be in (0, 1]");
}

TEST(MuonVariants, FlagErrors) {
  auto err = [](void (*set)(OptimConfig&)) {
    OptimConfig c;
    set(c);
    return test::error_of([&] { c.resolve(64, false); });
  };
  EXPECT_EQ(err([](OptimConfig& c) { c.adam_betas_head = "0.9"; }),
            "--adam-betas-head 0.9: expected two numbers in [0, 1) separated by a comma, e.g. 0.8,0.95");
  EXPECT_EQ(err([](OptimConfig& c) { c.adam_betas_gates = "0.9,1"; }),
            "--adam-betas-gates 0.9,1: expected two numbers in [0, 1) separated by a comma, e.g. 0.8,0.95");
  EXPECT_EQ(err([](OptimConfig& c) { c.muon_coeffs = "cubic"; }),
            "--muon-coeffs cubic: expected quintic or polar-express");
  EXPECT_EQ(err([](OptimConfig& c) { c.muon_coeffs = "polar-express", c.ns_steps = 6; }),
            "--ns-steps 6: Polar Express has 5 iterations (use --ns-steps 5 or fewer)");
  EXPECT_EQ(err([](OptimConfig& c) { c.cautious_wd = true; }),
            "--cautious-wd: needs a Muon weight decay (--muon-wd > 0)");
  EXPECT_EQ(err([](OptimConfig& c) { c.normuon_beta2 = 1; }), "--normuon-beta2 1: must be in [0, 1)");
  EXPECT_EQ(err([](OptimConfig& c) { c.adam_wd_gates = NAN; }), "--adam-wd-gates nan: must be >= 0");
  // Resolved: every group's settings, the embedding's and head's from --beta1/--beta2/--weight-decay.
  OptimConfig c;
  c.beta1 = 0.7, c.weight_decay = 0.05;
  c.resolve(3072, false);
  const AdamGroup e = c.adam_group(ParamGroup::kEmbed), ve = c.adam_group(ParamGroup::kValueEmbed);
  EXPECT_DOUBLE_EQ(e.lr, 0.1);
  EXPECT_DOUBLE_EQ(e.beta1, 0.7);
  EXPECT_DOUBLE_EQ(e.wd, 0.05);
  EXPECT_DOUBLE_EQ(ve.lr, 0.075);
  EXPECT_DOUBLE_EQ(ve.beta2, 0.995);
  EXPECT_DOUBLE_EQ(c.adam_group(ParamGroup::kX0Lambdas).beta1, 0.96);
  // Tied, the embedding (also the head) takes the head's rate, unless --lr-embed is given.
  OptimConfig tied, tied_given;
  tied.resolve(3072, true);
  EXPECT_DOUBLE_EQ(tied.adam_group(ParamGroup::kEmbed).lr, 0.002);
  EXPECT_DOUBLE_EQ(tied.adam_group(ParamGroup::kHead).lr, 0.002);
  tied_given.lr_embed = 0.05;
  tied_given.resolve(3072, true);
  EXPECT_DOUBLE_EQ(tied_given.adam_group(ParamGroup::kEmbed).lr, 0.05);
  // A config.json written before these flags loads with their defaults.
  nlohmann::json old = OptimConfig{}.to_json();
  old.erase("muon_coeffs"), old.erase("adam_betas_embed"), old.erase("normuon");
  OptimConfig loaded;
  fields_from_json(loaded, old);
  EXPECT_EQ(loaded.muon_coeffs, "quintic");
  EXPECT_FALSE(loaded.normuon);
}

// Muon's variants with its matrices shared among two threads (each list on one-thread kernels)
// against one thread (every GEMM and pass threaded): the same update up to summation order.
// (Cautious decay is left out: a weight whose update is within rounding of zero may flip its
// mask between summation orders; the parity test bounds that.)
TEST(MuonVariants, SharedAmongThreadsGiveTheOneThreadUpdate) {
  ModelConfig mc;
  mc.depth = 2, mc.d_model = 64, mc.n_head = 2, mc.n_kv_head = 1, mc.head_dim = 32, mc.seq_len = 16,
  mc.vocab_size = 64;
  OptimConfig oc;
  oc.normuon = true, oc.muon_coeffs = "polar-express", oc.muon_eq = true, oc.muon_renorm = true;
  oc.muon_wd = 0.1, oc.muon_momentum_warmup = 2;
  oc.resolve(mc.d_model, mc.tie_embeddings);
  const int saved = omp_get_max_threads();
  std::vector<float> result[2];
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    ParamArena p(mc), g(mc);
    init_params(p, 3);
    Rng r(8);
    for (size_t i = 0; i < g.numel(); ++i) g.data.data()[i] = float(r.normal());
    Optimizer o(oc, p, cpu_kernels());
    EXPECT_EQ(o.muon_threads(), threads);
    for (int s = 0; s < 3; ++s) o.step(p, g, 1.0, 0.3 * s, 0.0);
    result[threads - 1].assign(p.data.data(), p.data.data() + p.numel());
  }
  omp_set_num_threads(saved);
  EXPECT_LT(test::rel_err(test::to_f64(result[1].data(), result[1].size()),
                          test::to_f64(result[0].data(), result[0].size())),
            1e-5);
}

// NorMuon's state goes through a checkpoint: two steps, save, restore into a fresh optimizer,
// two more steps, bit for bit the same as four steps straight.
TEST(MuonVariants, NorMuonResumesExactlyFromACheckpoint) {
  ModelConfig mc;
  mc.depth = 1, mc.d_model = 64, mc.n_head = 2, mc.n_kv_head = 1, mc.head_dim = 32, mc.seq_len = 16, mc.vocab_size = 64;
  OptimConfig oc;
  oc.normuon = true, oc.muon_coeffs = "polar-express", oc.muon_wd = 0.1, oc.cautious_wd = true;
  oc.muon_momentum_warmup = 3;
  oc.resolve(mc.d_model, mc.tie_embeddings);
  ParamArena grads(mc);
  auto step = [&](Optimizer& o, ParamArena& p, int s) {
    Rng r(50 + uint64_t(s));
    for (size_t i = 0; i < grads.numel(); ++i) grads.data.data()[i] = float(r.normal());
    o.step(p, grads, 1.0 - 0.1 * s, 0.2 * s, 0.0);
  };
  ParamArena straight(mc);
  init_params(straight, 3);
  Optimizer a(oc, straight, cpu_kernels());
  for (int s = 0; s < 4; ++s) step(a, straight, s);

  ParamArena first(mc);
  init_params(first, 3);
  Optimizer b(oc, first, cpu_kernels());
  for (int s = 0; s < 2; ++s) step(b, first, s);
  TrainState st;
  st.step = st.optimizer_steps = 2;
  st.loader = nlohmann::json::object();
  const std::string path = checkpoint_path(test::tmp_dir("normuon_resume"), 2);
  write_checkpoint(path, mc, nlohmann::json::object(), st, first, b.m().data(), b.v().data());

  ParamArena resumed(mc);
  Optimizer c(oc, resumed, cpu_kernels());
  const CheckpointData ck = read_checkpoint(path);
  restore_checkpoint(ck, resumed, c.m().data(), c.v().data());
  c.set_steps_taken(ck.state.optimizer_steps);
  for (int s = 2; s < 4; ++s) step(c, resumed, s);
  for (size_t i = 0; i < resumed.numel(); ++i)
    ASSERT_EQ(resumed.data.data()[i], straight.data.data()[i]) << "element " << i;
  // The state is there: a matrix's second moment is non-zero after a step.
  size_t matrix = 0;
  while (resumed.specs[matrix].group != ParamGroup::kMatrix) ++matrix;
  EXPECT_GT(c.v().data()[resumed.offsets[matrix]], 0.0f);
}

}  // namespace
}  // namespace nt
