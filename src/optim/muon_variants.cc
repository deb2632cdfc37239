// SPDX-License-Identifier: MIT
#include "optim/muon_variants.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nt {

namespace {

// Each row's sum of squares, in double.
std::vector<double> row_sum_squares(const float* x, int64_t rows, int64_t cols, int threads) {
  std::vector<double> s(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = x + i * cols;
    double acc = 0;
    for (int64_t j = 0; j < cols; ++j) acc += double(r[j]) * double(r[j]);
    s[size_t(i)] = acc;
  }
  return s;
}

// Each column's sum of squares, in double (rows in order for every column).
std::vector<double> col_sum_squares(const float* x, int64_t rows, int64_t cols, int threads) {
  std::vector<double> s(size_t(cols), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const float* r = x + i * cols;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t j = 0; j < cols; ++j) s[size_t(j)] += double(r[j]) * double(r[j]);
  }
  return s;
}

double total(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return t;
}

}  // namespace

void muon_row_equilibrate(float* x, int64_t rows, int64_t cols, int threads) {
  const std::vector<double> ss = row_sum_squares(x, rows, cols, threads);
  const double target = std::sqrt(total(ss)) / std::sqrt(double(rows));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < rows; ++i) {
    const float f = float(target / std::max(std::sqrt(ss[size_t(i)]), 1e-6));
    float* r = x + i * cols;
    for (int64_t j = 0; j < cols; ++j) r[j] *= f;
  }
}

void scale_to_frobenius(float* x, int64_t n, double target, int threads) {
  const std::vector<double> ss = row_sum_squares(x, 1, n, threads);
  const float f = float(target / std::max(std::sqrt(ss[0]), 1e-6));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) x[i] *= f;
}

void normuon_normalize(float* x, float* v, int64_t rows, int64_t cols, float beta2, int threads) {
  const bool per_row = rows >= cols;
  const int64_t reduced = per_row ? cols : rows;  // the elements each entry of v averages
  const std::vector<double> ss =
      per_row ? row_sum_squares(x, rows, cols, threads) : col_sum_squares(x, rows, cols, threads);
  // The norm before (sum of the mean squares times their count) and after dividing by sqrt(v).
  double before = 0, after = 0;
  std::vector<double> step(ss.size());
  for (size_t j = 0; j < ss.size(); ++j) {
    const double mean = ss[j] / double(reduced);
    v[j] = beta2 * v[j] + (1 - beta2) * float(mean);
    step[j] = 1.0 / std::sqrt(std::max(double(v[j]), 1e-10));
    before += ss[j];
    after += ss[j] * step[j] * step[j];
  }
  const double keep = std::sqrt(before) / std::max(std::sqrt(after), 1e-10);
  std::vector<float> f(ss.size());
  for (size_t j = 0; j < ss.size(); ++j) f[j] = float(step[j] * keep);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < rows; ++i) {
    float* r = x + i * cols;
    if (per_row) {
      for (int64_t j = 0; j < cols; ++j) r[j] *= f[size_t(i)];
    } else {
      for (int64_t j = 0; j < cols; ++j) r[j] *= f[size_t(j)];
    }
  }
}

void muon_apply(float* p, const float* u, int64_t n, float lr, float wd, bool cautious, int threads) {
  const float decay = lr * wd;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) {
    const float mask = !cautious || u[i] * p[i] >= 0.0f ? 1.0f : 0.0f;
    p[i] -= lr * u[i] + decay * p[i] * mask;
  }
}

}  // namespace nt
