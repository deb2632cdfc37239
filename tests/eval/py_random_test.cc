// SPDX-License-Identifier: MIT
// PyRandom against CPython's random module: golden values, and sequences that /usr/bin/python3
// produces here for many seeds, sizes and shot counts (both of sample's algorithms).
#include "eval/core/py_random.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace nt {
namespace {

// Runs a Python program and returns its stdout ("" if Python is not there).
std::string run_python(const std::string& program) {
  const std::string cmd = "/usr/bin/python3 -c '" + program + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::vector<int64_t> read_ints(std::istringstream& in, size_t n) {
  std::vector<int64_t> v(n);
  for (auto& x : v) in >> x;
  return v;
}

TEST(PyRandom, GoldenValues) {
  // Recorded from CPython 3.11: Random(0).getrandbits(32), Random(1337).shuffle(range(10)),
  // Random(2**40).getrandbits(32).
  PyRandom r0(0);
  EXPECT_EQ(r0.genrand_uint32(), 3626764237u);
  PyRandom r(1337);
  std::vector<int> x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  r.shuffle(x);
  EXPECT_EQ(x, (std::vector<int>{0, 3, 7, 2, 1, 6, 4, 5, 8, 9}));
  PyRandom big(int64_t(1) << 40);  // two key words
  EXPECT_EQ(big.genrand_uint32(), 445128065u);
}

TEST(PyRandom, ShuffleMatchesPython) {
  const std::string out = run_python(
      "import random\n"
      "for seed in [0, 1, 7, 1337, 1234, 99999, 2**32 - 1, 2**32, 2**40 + 5]:\n"
      "  for n in [0, 1, 2, 3, 10, 100, 1000, 5000]:\n"
      "    x = list(range(n)); random.Random(seed).shuffle(x); print(seed, n, *x)\n");
  if (out.empty()) GTEST_SKIP() << "/usr/bin/python3 is not available";
  std::istringstream in(out);
  int cases = 0;
  int64_t seed, n;
  while (in >> seed >> n) {
    const auto want = read_ints(in, size_t(n));
    std::vector<int64_t> got(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) got[size_t(i)] = i;
    PyRandom(seed).shuffle(got);
    ASSERT_EQ(got, want) << "seed " << seed << " n " << n;
    ++cases;
  }
  EXPECT_EQ(cases, 72);
}

TEST(PyRandom, SampleMatchesPythonBothAlgorithms) {
  // n from 1 to past both set sizes (21 for k <= 5, 85 for k 6..10), k from 0 to 10 and beyond.
  const std::string out = run_python(
      "import random\n"
      "for seed in range(1234, 1234 + 40, 3):\n"
      "  for n in [1, 2, 5, 11, 20, 21, 22, 30, 84, 85, 86, 87, 200, 3000]:\n"
      "    for k in [0, 1, 3, 5, 6, 10, 25, 64]:\n"
      "      if k <= n: print(seed, n, k, *random.Random(seed).sample(range(n), k))\n");
  if (out.empty()) GTEST_SKIP() << "/usr/bin/python3 is not available";
  std::istringstream in(out);
  int cases = 0;
  int64_t seed, n, k;
  while (in >> seed >> n >> k) {
    const auto want = read_ints(in, size_t(k));
    ASSERT_EQ(PyRandom(seed).sample_indices(n, k), want) << "seed " << seed << " n " << n << " k " << k;
    ++cases;
  }
  EXPECT_GT(cases, 1000);
}

TEST(PyRandom, GetrandbitsAndRandbelowMatchPython) {
  const std::string out = run_python(
      "import random\n"
      "r = random.Random(42)\n"
      "print(*[r.getrandbits(k) for k in [1, 5, 31, 32, 33, 48, 63, 64, 0, 17]])\n"
      "r = random.Random(43)\n"
      "print(*[r._randbelow(n) for n in [1, 2, 3, 7, 1000, 2**31 + 1, 2**33 + 7, 10**15]])\n");
  if (out.empty()) GTEST_SKIP() << "/usr/bin/python3 is not available";
  std::istringstream in(out);
  PyRandom r(42);
  for (int k : {1, 5, 31, 32, 33, 48, 63, 64, 0, 17}) {
    uint64_t want;
    in >> want;
    EXPECT_EQ(r.getrandbits(k), want) << k;
  }
  PyRandom b(43);
  for (uint64_t n : {1ull, 2ull, 3ull, 7ull, 1000ull, (1ull << 31) + 1, (1ull << 33) + 7, 1000000000000000ull}) {
    uint64_t want;
    in >> want;
    EXPECT_EQ(b.randbelow(n), want) << n;
  }
}

}  // namespace
}  // namespace nt
