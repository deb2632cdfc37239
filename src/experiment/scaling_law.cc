// SPDX-License-Identifier: MIT
#include "experiment/scaling_law.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace nt::experiment {

namespace {

constexpr double kMinExponent = 0.02, kMaxExponent = 2.0;

double power_term(double x, double ref, double exponent) { return std::pow(x / ref, -exponent); }

constexpr int kTerms = 4;  // E, A, B, C
using Row = std::array<double, kTerms>;

// Solves the k x k system m x = r (k <= kTerms) by Gaussian elimination; false when it is singular.
bool solve_small(std::array<Row, kTerms> m, Row r, int k, Row& x) {
  for (int c = 0; c < k; ++c) {
    int piv = c;
    for (int i = c + 1; i < k; ++i)
      if (std::fabs(m[i][c]) > std::fabs(m[piv][c])) piv = i;
    if (std::fabs(m[piv][c]) < 1e-12) return false;
    std::swap(m[c], m[piv]), std::swap(r[c], r[piv]);
    for (int i = c + 1; i < k; ++i) {
      const double f = m[i][c] / m[c][c];
      for (int j = c; j < k; ++j) m[i][j] -= f * m[c][j];
      r[i] -= f * r[c];
    }
  }
  for (int c = k - 1; c >= 0; --c) {
    double s = r[c];
    for (int j = c + 1; j < k; ++j) s -= m[c][j] * x[j];
    x[c] = s / m[c][c];
  }
  return true;
}

// For fixed exponents: min sum (y - E - A' u - B' v - C r)^2 with E, A', B', C >= 0 over the first
// `terms` coefficients (the rest 0), by trying every set of free coefficients and keeping the best
// feasible one. Returns the squared error.
double solve_coefficients(const std::vector<Row>& rows, const std::vector<double>& y, int terms, Row& best) {
  double best_err = std::numeric_limits<double>::infinity();
  for (int mask = 1; mask < (1 << terms); ++mask) {
    int idx[kTerms], k = 0;
    for (int c = 0; c < terms; ++c)
      if (mask & (1 << c)) idx[k++] = c;
    std::array<Row, kTerms> m{};
    Row r{}, x{};
    for (size_t i = 0; i < rows.size(); ++i)
      for (int a = 0; a < k; ++a) {
        r[a] += rows[i][idx[a]] * y[i];
        for (int b = 0; b < k; ++b) m[a][b] += rows[i][idx[a]] * rows[i][idx[b]];
      }
    if (!solve_small(m, r, k, x)) continue;
    if (std::any_of(x.begin(), x.begin() + k, [](double v) { return v < 0; })) continue;
    Row full{};
    for (int a = 0; a < k; ++a) full[idx[a]] = x[a];
    double err = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      double e = y[i];
      for (int c = 0; c < kTerms; ++c) e -= full[c] * rows[i][c];
      err += e * e;
    }
    if (err < best_err) best_err = err, best = full;
  }
  return best_err;
}

// Distinct values (more than 2 % apart) and the ratio of the largest to the smallest.
void spread(std::vector<double> v, int& distinct, double& ratio) {
  std::sort(v.begin(), v.end());
  distinct = 1;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[i - 1] * 1.02) ++distinct;
  ratio = v.back() / v.front();
}

void check_points(const std::vector<FitPoint>& points) {
  if (points.size() < 5)
    fail("scaling fit: needs at least 5 finished runs (5 coefficients), got %zu", points.size());
  for (const FitPoint& p : points)
    if (!(std::isfinite(p.params) && p.params > 0 && std::isfinite(p.tokens) && p.tokens > 0 &&
          std::isfinite(p.val_bpb) && p.val_bpb > 0 && std::isfinite(p.unique_tokens) && p.unique_tokens >= 0))
      fail("scaling fit: run %s: parameters, tokens and val_bpb must be positive and finite (and the data's "
           "tokens not negative)",
           p.name.c_str());
  std::vector<double> n, d;
  for (const FitPoint& p : points) n.push_back(p.params), d.push_back(p.tokens);
  int nd = 0, dd = 0;
  double nr = 0, dr = 0;
  spread(n, nd, nr);
  spread(d, dd, dr);
  if (nd < 3 || nr < 1.5)
    fail("scaling fit: the runs' parameter counts are too alike (%d distinct, largest / smallest %.2f); the fit needs "
         "at least 3 model sizes spanning a factor 1.5 or more",
         nd, nr);
  if (dd < 3 || dr < 1.5)
    fail("scaling fit: the runs' token counts are too alike (%d distinct, largest / smallest %.2f); the fit needs "
         "at least 3 token counts spanning a factor 1.5 or more (runs of different lengths)",
         dd, dr);
}

}  // namespace

double repeated_epochs(double tokens, double unique_tokens) {
  return unique_tokens > 0 ? std::max(0.0, tokens / unique_tokens - 1) : 0.0;
}

double ScalingLaw::predict(double params, double tokens, double unique_tokens) const {
  return E + A * std::pow(params, -alpha) + B * std::pow(tokens, -beta) + C * repeated_epochs(tokens, unique_tokens);
}

ScalingFit fit_scaling_law(const std::vector<FitPoint>& points) {
  check_points(points);
  // Features are taken relative to the geometric means, so the coefficients stay near 1.
  double ln = 0, ld = 0;
  for (const FitPoint& p : points) ln += std::log(p.params), ld += std::log(p.tokens);
  const double n0 = std::exp(ln / double(points.size())), d0 = std::exp(ld / double(points.size()));
  std::vector<double> y;
  bool repeats = false;
  for (const FitPoint& p : points) y.push_back(p.val_bpb), repeats |= repeated_epochs(p.tokens, p.unique_tokens) > 0;
  const int terms = repeats ? 4 : 3;
  double best_err = std::numeric_limits<double>::infinity(), best_a = 0, best_b = 0;
  Row best_c{};
  auto search = [&](double a_lo, double a_hi, double b_lo, double b_hi, double step) {
    for (double a = a_lo; a <= a_hi + 1e-12; a += step)
      for (double b = b_lo; b <= b_hi + 1e-12; b += step) {
        std::vector<Row> rows;
        for (const FitPoint& p : points)
          rows.push_back({1.0, power_term(p.params, n0, a), power_term(p.tokens, d0, b),
                          repeated_epochs(p.tokens, p.unique_tokens)});
        Row c{};
        const double err = solve_coefficients(rows, y, terms, c);
        if (err < best_err) best_err = err, best_a = a, best_b = b, best_c = c;
      }
  };
  search(kMinExponent, kMaxExponent, kMinExponent, kMaxExponent, 0.02);
  search(std::max(kMinExponent, best_a - 0.02), std::min(kMaxExponent, best_a + 0.02),
         std::max(kMinExponent, best_b - 0.02), std::min(kMaxExponent, best_b + 0.02), 0.001);
  if (!std::isfinite(best_err)) fail("scaling fit: no solution (the runs' figures are degenerate)");
  ScalingFit f;
  f.law.E = best_c[0];
  f.law.A = best_c[1] * std::pow(n0, best_a), f.law.alpha = best_a;
  f.law.B = best_c[2] * std::pow(d0, best_b), f.law.beta = best_b;
  f.law.C = best_c[3];
  f.at_bound = best_a <= kMinExponent + 1e-9 || best_a >= kMaxExponent - 1e-9 || best_b <= kMinExponent + 1e-9 ||
               best_b >= kMaxExponent - 1e-9;
  double sq = 0;
  for (const FitPoint& p : points) {
    const double e = f.law.predict(p.params, p.tokens, p.unique_tokens) - p.val_bpb;
    sq += e * e;
    f.max_abs_error = std::max(f.max_abs_error, std::fabs(e));
  }
  f.rmse = std::sqrt(sq / double(points.size()));
  return f;
}

}  // namespace nt::experiment
