// SPDX-License-Identifier: MIT
#include "optim/optimizer.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

#include "core/check.h"
#include "core/system.h"
#include "optim/muon_variants.h"
#include "profile/profile.h"

namespace nt {

namespace {

// What a matrix costs Muon: the Newton-Schulz FLOPs of its default five steps, weighted by speed
// in bf16, whose Gram iteration runs its G chain (G G, P G, P (P G)) in fp32 at half the rate.
// (Where bf16 runs on matrix tiles and iterates plainly, the count is the plain iteration's.)
double ns_cost(const ParamSpec& s, bool bf16, bool bf16_tiles) {
  constexpr int kSteps = 5;
  const int64_t m = std::min(s.rows, s.cols), n = std::max(s.rows, s.cols);
  const bool plain_bf16 = bf16 && bf16_tiles;
  const double flops = newton_schulz_flops(m, n, kSteps, !plain_bf16);
  if (!bf16 || plain_bf16 || !newton_schulz_on_gram(m, n)) return flops;
  // The chain counted twice: each step's G G and all but the last step's P G and P (P G).
  return flops + 2.0 * double(m) * double(m) * double(m) * (kSteps + 2 * (kSteps - 1));
}

// Shares the matrices among `threads` threads, longest first to the least-loaded thread. When
// that leaves one thread more than 10 % above the mean (few matrices, or one dominating), it
// returns a single list instead: every matrix in turn, each GEMM threaded.
// Only the `owned` matrices (empty: all) are shared out.
std::vector<std::vector<size_t>> split_matrices(const std::vector<ParamSpec>& specs, int threads, bool bf16,
                                               bool bf16_tiles, const std::vector<bool>& owned) {
  std::vector<size_t> mats;
  double total = 0;
  for (size_t i = 0; i < specs.size(); ++i)
    if (specs[i].group == ParamGroup::kMatrix && (owned.empty() || owned[i]))
      mats.push_back(i), total += ns_cost(specs[i], bf16, bf16_tiles);
  if (threads > 1 && mats.size() >= size_t(threads)) {
    std::vector<size_t> order = mats;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return ns_cost(specs[a], bf16, bf16_tiles) > ns_cost(specs[b], bf16, bf16_tiles); });
    std::vector<std::vector<size_t>> work(static_cast<size_t>(threads), std::vector<size_t>{});
    std::vector<double> load(size_t(threads), 0.0);
    for (size_t i : order) {
      const size_t t = size_t(std::min_element(load.begin(), load.end()) - load.begin());
      work[t].push_back(i);
      load[t] += ns_cost(specs[i], bf16, bf16_tiles);
    }
    if (*std::max_element(load.begin(), load.end()) <= 1.1 * total / threads) {
      for (auto& w : work) std::sort(w.begin(), w.end());
      return work;
    }
  }
  return {mats};
}

// One thread's Newton-Schulz scratch for its list: x and y hold its largest matrix, a and b
// its largest Gram matrix (the smaller side squared).
struct ScratchSize {
  int64_t mat = 0, gram = 0;
};
ScratchSize scratch_size(const std::vector<ParamSpec>& specs, const std::vector<size_t>& list) {
  ScratchSize z;
  for (size_t i : list) {
    const int64_t small = std::min(specs[i].rows, specs[i].cols);
    z.mat = std::max(z.mat, specs[i].numel());
    z.gram = std::max(z.gram, small * small);
  }
  return z;
}

// Where each tensor's state starts: the parameters' own offsets when every tensor is owned (so
// the state is laid out like them), else the owned tensors packed in table order, each rounded
// up to 16 floats (64 bytes) as in the parameter arena. Returns the floats the layout needs.
size_t state_layout(const std::vector<ParamSpec>& specs, const std::vector<bool>& owned, std::vector<size_t>* offsets) {
  size_t total = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const bool mine = owned.empty() || owned[i];
    if (offsets) offsets->push_back(mine ? total : ~size_t(0));
    if (mine) total += (size_t(specs[i].numel()) + 15) / 16 * 16;
  }
  return total;
}

}  // namespace

size_t Optimizer::state_floats(const std::vector<ParamSpec>& specs, int threads, bool bf16_newton_schulz,
                               const std::vector<bool>& owned) {
  // m_ and v_ in the arena layout, and per thread the Newton-Schulz scratch x, y, a, b and the
  // bf16 version's bf16 scratch (half a float an element): the composed iteration's two iterates
  // and two operands, or the backend's one op's newton_schulz_bf16_work, 4 m n + 3 m², counted
  // here (the larger) whatever the backend.
  size_t floats = 2 * state_layout(specs, owned, nullptr);
  // (The split assumes no matrix tiles; with them it can differ a little: an estimate.)
  const int n_threads = threads > 0 ? threads : job_threads();
  for (const auto& list : split_matrices(specs, n_threads, bf16_newton_schulz, false, owned)) {
    const ScratchSize z = scratch_size(specs, list);
    floats += size_t(2 * z.mat + 2 * z.gram + (bf16_newton_schulz ? 2 * z.mat + (3 * z.gram + 1) / 2 : 0));
  }
  return floats;
}

Optimizer::Optimizer(const OptimConfig& cfg, ParamArena& params, const KernelTable& k, const std::vector<bool>& owned)
    : cfg_(cfg), k_(k), ctx_(job_threads()) {
  NT_CHECK(owned.empty() || owned.size() == params.specs.size(), "ownership of %zu tensors for %zu", owned.size(),
           params.specs.size());
  size_t floats = params.numel();
  if (owned.empty()) state_offsets_ = params.offsets;
  else floats = state_layout(params.specs, owned, &state_offsets_);
  m_.resize(floats), v_.resize(floats);
  work_ = split_matrices(params.specs, ctx_.threads(), cfg.bf16_newton_schulz, k.bf16_matrix_tiles, owned);
  scratch_.resize(work_.size());
  for (size_t t = 0; t < work_.size(); ++t) {
    const ScratchSize z = scratch_size(params.specs, work_[t]);
    MuonScratch& sc = scratch_[t];
    sc.x.resize(size_t(z.mat)), sc.y.resize(size_t(z.mat));
    sc.a.resize(size_t(z.gram)), sc.b.resize(size_t(z.gram));
    if (work_.size() > 1) sc.own_ctx = std::make_unique<ExecContext>(1);
  }
}

// The polynomial's linear term is folded into the last GEMM, X' = (a I + b A + c A A) X, and
// the iterate ping-pongs between x and y: no pass over the (m, n) iterate besides the GEMMs.
//
// Long matrices (cols >= 2 rows: the MLP's) iterate on the Gram matrix instead. Each step is
// X' = P X with P = p(G), G = X Xᵀ, and every P is a polynomial in the first Gram matrix G0, so
// they all commute with it and with each other: G' = P G P = P (P G), and the result is
// (P4 ... P1 P0) X0. That is one m x n Gram product and one m x n product at the ends, and
// m x m products in between: for five steps, counting every product whole, 4 m²n + 34 m³ FLOPs
// against 20 m²n + 10 m³ (44 % fewer at n = 4m). The accumulated product has no self-correction:
// it lands 2e-5 from the exact iteration where the plain one lands 1e-6 (the test bounds both).
// NewtonSchulzBf16 runs the same products (newton_schulz_gram_step is their shared chain).
double newton_schulz_flops(int64_t rows, int64_t cols, int steps, bool gram_when_long) {
  const double m = double(rows), n = double(cols), s = double(steps);
  if (steps == 0) return 0.0;
  // Plain, each step: X X^T, A A, B X. On the Gram matrix: G0 and the final product; each step
  // G G, all but the last P G and P (P G), all but the first P (P_{it-1} ... P0).
  if (gram_when_long && newton_schulz_on_gram(rows, cols)) return 4 * m * m * n + 2 * m * m * m * (s + 2 * (s - 1) + (s - 1));
  return s * (4 * m * m * n + 2 * m * m * m);
}

void newton_schulz(const KernelTable& k, const ExecContext& ctx, float* x, float* y, float* a, float* b, int64_t m,
                   int64_t n, int steps, NsCoeffs coeffs) {
  NT_CHECK(m <= n, "newton_schulz wants rows <= cols (%ld, %ld)", long(m), long(n));
  k.axpby(ctx, x, x, m * n, 0.0f, ns_norm_scale(coeffs, std::sqrt(k.sum_squares(ctx, x, m * n))));
  if (steps == 0) return;
  if (newton_schulz_on_gram(m, n)) {
    // a: G; b: P; y holds the product so far, q, and a product's scratch, r (2 m² <= m n).
    float *q = y, *r = y + m * m;
    k.matmul(ctx, a, x, x, m, m, n, false, true, 0.0f);  // G0 = X0 X0^T
    for (int it = 0; it < steps; ++it) {
      const bool last = it + 1 == steps;
      newton_schulz_gram_step(k, ctx, a, b, r, m, last, ns_poly(coeffs, it));  // P into b; G' into a
      float* dst = last ? a : r;  // the last step's product goes to a: G is no longer needed
      if (it == 0) std::memcpy(dst, b, size_t(m * m) * sizeof(float));
      else symmetric_product(k, ctx, dst, b, q, m);  // P (P_{it-1} ... P0)
      if (!last) std::swap(q, r);
    }
    k.matmul(ctx, y, a, x, m, n, m, false, false, 0.0f);  // X = (P_{steps-1} ... P0) X0
    std::memcpy(x, y, size_t(m * n) * sizeof(float));
    return;
  }
  float *cur = x, *next = y;
  for (int it = 0; it < steps; ++it) {
    k.matmul(ctx, a, cur, cur, m, m, n, false, true, 0.0f);    // A = X X^T      (m, m)
    symmetric_square(k, ctx, b, a, m);                         // A A (A is symmetric)
    newton_schulz_poly(k, ctx, b, a, m, ns_poly(coeffs, it));  // a I + b A + c A A
    k.matmul(ctx, next, b, cur, m, n, m, false, false, 0.0f);  // X' = (a I + b A + c A A) X
    std::swap(cur, next);
  }
  if (cur != x) std::memcpy(x, cur, size_t(m * n) * sizeof(float));
}

namespace {
// A profiler zone of the thread that drives the step, or a trace slice on another thread's
// track: the table counts the main thread's share of the side-by-side work, which takes about
// as long as every other thread's (the split is balanced), and the trace shows each thread's.
class MuonZone {
 public:
  MuonZone(bool main_thread, profile::Id id, const char* label) {
    if (main_thread) zone_.emplace(id);
    else work_.emplace(label);
  }

 private:
  std::optional<profile::Zone> zone_;
  std::optional<profile::WorkZone> work_;
};
}  // namespace

// The momentum's Nesterov update u, laid out like p, orthogonalised; returns where the result
// is (x, y or u itself), laid out like p. The backend's one-op bf16 Newton-Schulz takes u as it
// is (a tall matrix as the transpose of a long one); otherwise u goes to x with rows <= cols
// (transposed from y if tall) and back.
float* Optimizer::orthogonalize(MuonScratch& sc, float* u, int64_t rows, int64_t cols, bool main_thread) {
  const bool tall = rows > cols;
  const int64_t m = tall ? cols : rows, k = tall ? rows : cols;
  const NsCoeffs coeffs = cfg_.ns_coeffs();
  const ExecContext& ctx = exec(sc);
  if (cfg_.bf16_newton_schulz) {
    MuonZone zone(main_thread, profile::kNewtonSchulz, "newton-schulz");
    if (sc.ns_bf16.run_one_op(k_, ctx, u, tall, sc.a.data(), sc.b.data(), m, k, cfg_.ns_steps, coeffs)) return u;
  }
  if (tall) {
    MuonZone zone(main_thread, profile::kMuon, "muon momentum");
    k_.transpose(ctx, sc.x.data(), sc.y.data(), rows, cols);
  }
  {
    MuonZone zone(main_thread, profile::kNewtonSchulz, "newton-schulz");
    if (cfg_.bf16_newton_schulz)
      sc.ns_bf16.run(k_, ctx, sc.x.data(), sc.a.data(), sc.b.data(), m, k, cfg_.ns_steps, coeffs);
    else newton_schulz(k_, ctx, sc.x.data(), sc.y.data(), sc.a.data(), sc.b.data(), m, k, cfg_.ns_steps, coeffs);
  }
  if (!tall) return sc.x.data();
  MuonZone zone(main_thread, profile::kMuon, "muon momentum");
  k_.transpose(ctx, sc.y.data(), sc.x.data(), cols, rows);
  return sc.y.data();
}

void Optimizer::muon_update(MuonScratch& sc, float* p, const float* g, float* buf, float* v2, int64_t rows,
                            int64_t cols, const MuonStep& st, bool main_thread) {
  const int64_t n = rows * cols;
  // buf = mom buf + (1 - mom) g; Nesterov u = mom buf + (1 - mom) g, laid out like p.
  float* u = rows > cols ? sc.y.data() : sc.x.data();
  const ExecContext& ctx = exec(sc);
  {
    MuonZone zone(main_thread, profile::kMuon, "muon momentum");
    k_.nesterov(ctx, u, buf, g, n, st.momentum);
    if (cfg_.muon_eq) muon_row_equilibrate(u, rows, cols, ctx.threads());
  }
  float* upd = orthogonalize(sc, u, rows, cols, main_thread);
  MuonZone zone(main_thread, profile::kMuon, "muon momentum");
  if (cfg_.muon_renorm) scale_to_frobenius(upd, n, std::sqrt(double(std::min(rows, cols))), ctx.threads());
  if (cfg_.normuon) normuon_normalize(upd, v2, rows, cols, float(cfg_.normuon_beta2), ctx.threads());
  const float lr = st.lr * std::sqrt(std::max(1.0f, float(rows) / float(cols)));
  if (st.wd == 0) k_.axpby(ctx, p, upd, n, -lr, 1.0f);
  else muon_apply(p, upd, n, lr, st.wd, cfg_.cautious_wd, ctx.threads());
}

void Optimizer::muon_step(ParamArena& params, const ParamArena& grads, const MuonStep& st) {
  auto update = [&](size_t t, size_t i, bool main_thread) {
    const ParamSpec& s = params.specs[i];
    const size_t off = state_offsets_[i];
    muon_update(scratch_[t], params.tensor(i), grads.tensor(i), m_.data() + off, v_.data() + off, s.rows, s.cols, st,
                main_thread);
  };
  if (work_.size() == 1) {
    for (size_t i : work_[0]) update(0, i, true);
    return;
  }
  // Each thread runs its list with its list's one-thread context, so the kernels' own parallel
  // regions and oneDNN stay on the calling thread, each list with a workspace of its own. A list
  // whose thread is missing (a smaller team than asked for) is taken by the next one. Exceptions
  // cannot leave a parallel region: the first is kept and rethrown after it.
  std::vector<std::exception_ptr> errors(work_.size());
  const size_t lists = work_.size();
#pragma omp parallel num_threads(int(lists))
  {
    const size_t team = size_t(omp_get_num_threads());
    for (size_t t = size_t(omp_get_thread_num()); t < lists; t += team) {
      try {
        for (size_t i : work_[t]) update(t, i, omp_get_thread_num() == 0);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void Optimizer::export_state(const ParamArena& layout, float* m, float* v) const {
  for (size_t i = 0; i < layout.specs.size(); ++i) {
    if (!owns(i)) continue;
    const size_t n = size_t(layout.specs[i].numel());
    std::memcpy(m + layout.offsets[i], m_.data() + state_offsets_[i], n * sizeof(float));
    std::memcpy(v + layout.offsets[i], v_.data() + state_offsets_[i], n * sizeof(float));
  }
}

void Optimizer::import_state(const ParamArena& layout, const float* m, const float* v) {
  for (size_t i = 0; i < layout.specs.size(); ++i) {
    if (!owns(i)) continue;
    const size_t n = size_t(layout.specs[i].numel());
    std::memcpy(m_.data() + state_offsets_[i], m + layout.offsets[i], n * sizeof(float));
    std::memcpy(v_.data() + state_offsets_[i], v + layout.offsets[i], n * sizeof(float));
  }
}

void Optimizer::step(ParamArena& params, const ParamArena& grads, double lrm, double progress, double warmdown) {
  ++t_;
  for (size_t i = 0; i < params.specs.size(); ++i) {
    const auto& s = params.specs[i];
    if (s.group == ParamGroup::kMatrix || !owns(i)) continue;
    profile::Zone zone(profile::kAdamW);
    const AdamGroup a = cfg_.adam_group(s.group);
    const float bc1 = float(1.0 - std::pow(a.beta1, double(t_)));
    const float bc2 = float(1.0 - std::pow(a.beta2, double(t_)));
    k_.adamw_step(ctx_, params.tensor(i), grads.tensor(i), m_.data() + state_offsets_[i], v_.data() + state_offsets_[i],
                  s.numel(), float(a.lr * cfg_.lr_scale * lrm), float(a.beta1), float(a.beta2), float(cfg_.eps),
                  float(a.wd), bc1, bc2);
  }
  const MuonStep st{float(cfg_.lr_matrix * cfg_.lr_scale * lrm), float(cfg_.muon_momentum_at(t_ - 1, warmdown)),
                    float(cfg_.muon_wd_at(progress))};
  muon_step(params, grads, st);
}

}  // namespace nt
