// SPDX-License-Identifier: MIT
// Shared helpers for the tests: seeded random data and error measures.
#pragma once
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/exec.h"

namespace nt::test {

// A context of `threads` threads for the tests' op calls: one per count, kept for the test
// binary's life (its workspace stays warm, as a model's does).
inline const ExecContext& ctx_for(int threads) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<ExecContext>> contexts;
  const std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<ExecContext>& c = contexts[threads];
  if (!c) c = std::make_unique<ExecContext>(threads);
  return *c;
}
// The context of OpenMP's current thread count: the tests that vary the count with
// omp_set_num_threads get a context of that many threads.
inline const ExecContext& test_ctx() { return ctx_for(omp_get_max_threads()); }

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
    const double d = std::abs(a[i] - b[i]);
    if (!(d <= num)) num = d;  // (a NaN sticks: std::max would drop it and pass a NaN result)
    den = std::max(den, std::abs(b[i]));
  }
  return num / den;
}

// Shapes of the caller's own choice from the environment, added to a test's fixed ones:
// NAME="a,b,c;d,e,f" (N positive integers per shape). Malformed text throws
// an error naming the variable (the test fails). Used by the kernel parity tests
// (NT_TEST_MATMUL_SHAPES, NT_TEST_ATTENTION_SHAPES, NT_TEST_ROW_SHAPES; README, "Tests").
template <size_t N>
std::vector<std::array<int64_t, N>> env_shapes(const char* name) {
  std::vector<std::array<int64_t, N>> shapes;
  const char* text = std::getenv(name);
  if (!text) return shapes;
  std::stringstream all(text);
  std::string item;
  while (std::getline(all, item, ';')) {
    if (item.empty()) continue;
    std::array<int64_t, N> s{};
    std::stringstream dims(item);
    std::string d;
    size_t i = 0;
    while (std::getline(dims, d, ',')) {
      char* end = nullptr;
      const long long v = i < N ? std::strtoll(d.c_str(), &end, 10) : 0;
      if (i >= N || d.empty() || *end != '\0' || v <= 0 || v > 100000)
        fail("%s: '%s' is not %zu positive integers separated by commas", name, item.c_str(), N);
      s[i++] = v;
    }
    if (i != N) fail("%s: '%s' is not %zu positive integers separated by commas", name, item.c_str(), N);
    shapes.push_back(s);
  }
  return shapes;
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

namespace nt {
using test::ctx_for;
using test::test_ctx;
}  // namespace nt
