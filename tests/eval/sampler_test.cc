// SPDX-License-Identifier: MIT
// The sampler's choice of the next token from fixed logits, against a plain reference: greedy at
// temperature 0, top-k = 1 is greedy at any temperature, top-k never leaves the k largest, and
// the frequencies of many draws match softmax(logits / temperature) over the top k.
//
// Checked to fail on purpose (tests/mutation/mutations.py): the division by the temperature
// dropped (exp(l - max)) fails the frequencies; top-k widened to k + 1 fails top-k = 1, the k
// largest and the frequencies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "eval/sampler.h"

namespace nt {
namespace {

// Logits with a spread of values, a tie for the maximum at two positions, and negative ones.
std::vector<float> fixed_logits(int V, uint64_t seed, bool tie) {
  Rng r(seed);
  std::vector<float> z(static_cast<size_t>(V));
  for (auto& v : z) v = float(r.uniform() * 6.0 - 3.0);
  if (tie) {
    const auto mx = std::max_element(z.begin(), z.end());
    z[size_t(V - 1)] = *mx;  // a later copy of the maximum: the first one must win
  }
  return z;
}

// The reference: the probabilities softmax(z / t) over the k largest (the first of equals ranked
// higher), zero elsewhere, in double.
std::vector<double> reference_probs(const std::vector<float>& z, double t, int k) {
  std::vector<int> idx(z.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return z[size_t(a)] > z[size_t(b)]; });
  std::vector<double> p(z.size(), 0.0);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += p[size_t(idx[size_t(i)])] = std::exp(double(z[size_t(idx[size_t(i)])]) / t);
  for (auto& v : p) v /= sum;
  return p;
}

TEST(Sampler, TemperatureZeroIsArgmaxFirstOfEquals) {
  for (int V : {1, 2, 7, 50, 1000}) {
    for (bool tie : {false, true}) {
      const auto z = fixed_logits(V, uint64_t(V) * 3 + tie, tie && V > 1);
      const int want = int(std::max_element(z.begin(), z.end()) - z.begin());  // the first maximum
      for (int top_k : {0, 1, 5}) {
        SampleOptions o;
        o.temperature = 0;
        o.top_k = top_k;
        Rng rng(1);
        for (int i = 0; i < 20; ++i) EXPECT_EQ(int(sample_next_token(z.data(), V, o, rng)), want) << V << " " << top_k;
      }
    }
  }
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  for (int V : {2, 9, 300}) {
    for (bool tie : {false, true}) {
      const auto z = fixed_logits(V, uint64_t(V) + 11 + tie, tie);
      const int want = int(std::max_element(z.begin(), z.end()) - z.begin());
      for (double t : {0.3, 1.0, 50.0}) {
        SampleOptions o;
        o.temperature = t;
        o.top_k = 1;
        Rng rng(7);
        for (int i = 0; i < 200; ++i) ASSERT_EQ(int(sample_next_token(z.data(), V, o, rng)), want) << V << " t " << t;
      }
    }
  }
}

// At a high temperature every token of the k largest is likely, so a wider top-k would emit the
// (k+1)-th within these draws; each of the k is also seen.
TEST(Sampler, TopKNeverLeavesTheKLargest) {
  const int V = 40;
  const auto z = fixed_logits(V, 3, false);
  std::vector<int> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return z[size_t(a)] > z[size_t(b)]; });
  for (int k : {2, 3, 10, 39}) {
    SampleOptions o;
    o.temperature = 20.0;
    o.top_k = k;
    Rng rng{uint64_t(k)};
    std::vector<int> seen(size_t(V), 0);
    for (int i = 0; i < 20000; ++i) ++seen[sample_next_token(z.data(), V, o, rng)];
    for (int r = 0; r < V; ++r) {
      if (r < k)
        EXPECT_GT(seen[size_t(order[size_t(r)])], 0) << "k " << k << ": rank " << r << " never drawn";
      else
        EXPECT_EQ(seen[size_t(order[size_t(r)])], 0) << "k " << k << ": rank " << r << " is outside the top k";
    }
  }
}

// Frequencies of many draws against the reference distribution, within 5 standard deviations
// of a binomial count for each token. Temperatures below and above 1 both appear, so scaling the
// logits the wrong way (or not at all) moves the leading probabilities by 0.05 or more, ten times
// the allowance at these counts.
TEST(Sampler, FrequenciesFollowSoftmaxOverTemperature) {
  const std::vector<float> z = {2.0f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, 1.5f, -2.0f};
  const int V = int(z.size()), N = 200000;
  for (double t : {0.5, 1.0, 2.0}) {
    for (int k : {0, 3, 6}) {
      SampleOptions o;
      o.temperature = t;
      o.top_k = k;
      Rng rng{uint64_t(t * 100) + uint64_t(k)};
      std::vector<int> count(size_t(V), 0);
      for (int i = 0; i < N; ++i) ++count[sample_next_token(z.data(), V, o, rng)];
      const auto p = reference_probs(z, t, k > 0 ? k : V);
      for (int v = 0; v < V; ++v) {
        const double f = double(count[size_t(v)]) / N, sd = std::sqrt(p[size_t(v)] * (1 - p[size_t(v)]) / N);
        EXPECT_NEAR(f, p[size_t(v)], 5 * sd + 1e-12) << "t " << t << " k " << k << " token " << v;
      }
    }
  }
}

}  // namespace
}  // namespace nt
