// SPDX-License-Identifier: MIT
#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "profile/profile.h"

namespace nt {

void OptimConfig::resolve(int d_model) {
  const double scale = std::pow(double(d_model) / 768.0, -0.5);
  if (lr_embed < 0) lr_embed = 0.2 * scale;
  if (lr_head < 0) lr_head = 0.004 * scale;
  if (!(lr_matrix >= 0) || !std::isfinite(lr_matrix)) fail("--lr-matrix %g: must be >= 0", lr_matrix);
  if (!(lr_embed >= 0) || !std::isfinite(lr_embed)) fail("--lr-embed %g: must be >= 0", lr_embed);
  if (!(lr_head >= 0) || !std::isfinite(lr_head)) fail("--lr-head %g: must be >= 0", lr_head);
  if (!(beta1 >= 0 && beta1 < 1)) fail("--beta1 %g: must be in [0, 1)", beta1);
  if (!(beta2 >= 0 && beta2 < 1)) fail("--beta2 %g: must be in [0, 1)", beta2);
  if (!(eps >= 0)) fail("--adam-eps %g: must be >= 0", eps);
  if (!(weight_decay >= 0)) fail("--weight-decay %g: must be >= 0", weight_decay);
  if (!(momentum >= 0 && momentum < 1)) fail("--muon-momentum %g: must be in [0, 1)", momentum);
  if (ns_steps < 0 || ns_steps > 100) fail("--ns-steps %d: must be in [0, 100]", ns_steps);
}

nlohmann::json OptimConfig::to_json() const {
  return {{"lr_matrix", lr_matrix}, {"lr_embed", lr_embed}, {"lr_head", lr_head}, {"beta1", beta1},
          {"beta2", beta2}, {"eps", eps}, {"weight_decay", weight_decay}, {"momentum", momentum},
          {"ns_steps", ns_steps}};
}

size_t Optimizer::state_floats(const std::vector<ParamSpec>& specs) {
  size_t max_mat = 0, max_gram = 0;
  for (const auto& s : specs)
    if (s.group == ParamGroup::kMatrix) {
      max_mat = std::max<size_t>(max_mat, size_t(s.numel()));
      const size_t small = size_t(std::min(s.rows, s.cols));
      max_gram = std::max(max_gram, small * small);
    }
  // m_ and v_ in the arena layout, and the Newton-Schulz scratch x_, y_, a_, b_.
  return 2 * arena_numel(specs) + 2 * max_mat + 2 * max_gram;
}

Optimizer::Optimizer(const OptimConfig& cfg, ParamArena& params, const KernelTable& k)
    : cfg_(cfg), k_(k), m_(params.numel()), v_(params.numel()) {
  int64_t max_mat = 0, max_gram = 0;
  for (const auto& s : params.specs)
    if (s.group == ParamGroup::kMatrix) {
      max_mat = std::max(max_mat, s.numel());
      const int64_t small = std::min(s.rows, s.cols);
      max_gram = std::max(max_gram, small * small);
    }
  x_.resize(size_t(max_mat));
  y_.resize(size_t(max_mat));
  a_.resize(size_t(max_gram));
  b_.resize(size_t(max_gram));
}

// The polynomial's linear term is folded into the last GEMM, X' = (a I + b A + c A A) X, and
// the iterate ping-pongs between x and y: no pass over the (m, n) iterate besides the GEMMs.
void newton_schulz(const KernelTable& k, float* x, float* y, float* a, float* b, int64_t m, int64_t n, int steps) {
  NT_CHECK(m <= n, "newton_schulz wants rows <= cols (%ld, %ld)", long(m), long(n));
  const float norm = float(std::sqrt(k.sum_squares(x, m * n)));
  k.axpby(x, x, m * n, 0.0f, 1.0f / (norm + 1e-7f));
  float *cur = x, *next = y;
  for (int it = 0; it < steps; ++it) {
    k.matmul(a, cur, cur, m, m, n, false, true, 0.0f);  // A = X X^T      (m, m)
    k.matmul(b, a, a, m, m, m, false, false, 0.0f);     // A A
    newton_schulz_poly(k, b, a, m);                     // a I + b A + c A A
    k.matmul(next, b, cur, m, n, m, false, false, 0.0f); // X' = (a I + b A + c A A) X
    std::swap(cur, next);
  }
  if (cur != x) std::memcpy(x, cur, size_t(m * n) * sizeof(float));
}

// In 32 x 32 tiles: a row-at-a-time transpose writes every element to a different cache line
// (and, for a 2048-row matrix, a different page), which made it cost as much as the momentum.
static void transpose(float* dst, const float* src, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
#pragma omp parallel
  {
    profile::WorkZone work("transpose");
#pragma omp for collapse(2) schedule(static) nowait
    for (int64_t i0 = 0; i0 < rows; i0 += kTile)
      for (int64_t j0 = 0; j0 < cols; j0 += kTile)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j)
          for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i) dst[j * rows + i] = src[i * cols + j];
  }
}

void Optimizer::muon_update(float* p, const float* g, float* buf, int64_t rows, int64_t cols, float lr) {
  const int64_t n = rows * cols;
  const bool tall = rows > cols;
  const int64_t m = tall ? cols : rows, k = tall ? rows : cols;
  {
    profile::Zone zone(profile::kMuon);
    // buf = mom buf + (1 - mom) g; Nesterov u = mom buf + (1 - mom) g, laid out with rows <=
    // cols in x_ (built there directly when no transpose is needed, else in y_ first).
    float* u = tall ? y_.data() : x_.data();
    k_.nesterov(u, buf, g, n, float(cfg_.momentum));
    if (tall) transpose(x_.data(), y_.data(), rows, cols);
  }
  {
    profile::Zone zone(profile::kNewtonSchulz);
    if (cfg_.bf16_newton_schulz) ns_bf16_.run(k_, x_.data(), a_.data(), b_.data(), m, k, cfg_.ns_steps);
    else newton_schulz(k_, x_.data(), y_.data(), a_.data(), b_.data(), m, k, cfg_.ns_steps);
  }
  profile::Zone zone(profile::kMuon);
  const float* upd = x_.data();
  if (tall) {
    transpose(y_.data(), x_.data(), cols, rows);
    upd = y_.data();
  }
  const float scale = std::sqrt(std::max(1.0f, float(rows) / float(cols)));
  k_.axpby(p, upd, n, -lr * scale, 1.0f);
}

void Optimizer::step(ParamArena& params, const ParamArena& grads, double lrm) {
  ++t_;
  const float bc1 = float(1.0 - std::pow(cfg_.beta1, double(t_)));
  const float bc2 = float(1.0 - std::pow(cfg_.beta2, double(t_)));
  for (size_t i = 0; i < params.specs.size(); ++i) {
    const auto& s = params.specs[i];
    float* p = params.tensor(i);
    const float* g = grads.tensor(i);
    float* m = m_.data() + params.offsets[i];
    float* v = v_.data() + params.offsets[i];
    switch (s.group) {
      case ParamGroup::kMatrix:
        muon_update(p, g, m, s.rows, s.cols, float(cfg_.lr_matrix * cfg_.lr_scale * lrm));
        break;
      case ParamGroup::kEmbed:
      case ParamGroup::kHead: {
        profile::Zone zone(profile::kAdamW);
        const double lr = (s.group == ParamGroup::kEmbed ? cfg_.lr_embed : cfg_.lr_head) * cfg_.lr_scale * lrm;
        k_.adamw_step(p, g, m, v, s.numel(), float(lr), float(cfg_.beta1), float(cfg_.beta2), float(cfg_.eps),
                      float(cfg_.weight_decay), bc1, bc2);
        break;
      }
    }
  }
}

}  // namespace nt
