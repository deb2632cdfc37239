// SPDX-License-Identifier: MIT
// Shared helpers for the tests: seeded random data and error measures.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"

namespace nt::test {

inline std::vector<double> randn(size_t n, uint64_t seed, double scale = 1.0) {
  Rng r(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = scale * r.normal();
  return v;
}

inline std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }
inline std::vector<double> to_f64(const float* p, size_t n) { return {p, p + n}; }

// max |a - b| / (max |b| + tiny): the error relative to the reference's scale.
inline double rel_err(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(a[i] - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return num / den;
}

inline std::string tmp_dir(const std::string& name) {
  std::string d = std::string(NT_BINARY_DIR) + "/test_tmp/" + name;
  std::string cmd = "rm -rf '" + d + "' && mkdir -p '" + d + "'";
  if (std::system(cmd.c_str()) != 0) return d;
  return d;
}

}  // namespace nt::test
