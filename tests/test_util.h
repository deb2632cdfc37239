// SPDX-License-Identifier: MIT
// Shared helpers for the tests: seeded random data and error measures.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/check.h"
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

// A fresh, empty folder under the build tree for one test (name may contain '/').
inline std::string tmp_dir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::path(NT_BINARY_DIR) / "test_tmp" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

// The message of the nt::Error that f throws, or "" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace nt::test
