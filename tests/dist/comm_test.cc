// SPDX-License-Identifier: MIT
// The job's communication: a single process (always), and under mpirun (tests/CMakeLists.txt
// runs this binary over 3 ranks too) the sum's fixed rank order, equal bits on every rank, and
// broadcasts across the chunk boundaries.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"
#include "dist/comm.h"

namespace nt::dist {
namespace {

// Rank r's part of a sum: values of very different sizes, so that any other grouping of the
// additions than ((x0 + x1) + x2) ... changes some of the bits.
template <typename T>
std::vector<T> part(int rank, size_t n) {
  Rng rng(1234 + uint64_t(rank));
  std::vector<T> x(n);
  for (size_t i = 0; i < n; ++i) {
    const double scale = (i + size_t(rank)) % 3 == 0 ? 1e8 : (i + size_t(rank)) % 3 == 1 ? 1.0 : -1e8;
    x[i] = T(scale * (1.0 + double(rng.below(1000)) / 1000.0));
  }
  return x;
}

template <typename T>
void expect_rank_order_sum(Comm& c, size_t n) {
  std::vector<T> x = part<T>(c.rank(), n);
  c.allreduce_sum(x.data(), x.size());
  std::vector<T> want = part<T>(0, n);
  for (int r = 1; r < c.size(); ++r) {
    const std::vector<T> p = part<T>(r, n);
    for (size_t i = 0; i < n; ++i) want[i] = want[i] + p[i];
  }
  EXPECT_EQ(0, std::memcmp(x.data(), want.data(), n * sizeof(T))) << "rank " << c.rank();
  // Every rank holds rank 0's bits.
  std::vector<T> first = x;
  c.broadcast(first.data(), first.size() * sizeof(T), 0);
  EXPECT_EQ(0, std::memcmp(x.data(), first.data(), n * sizeof(T))) << "rank " << c.rank();
}

TEST(Comm, SingleProcessCollectivesKeepTheirInput) {
  SingleComm c;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  std::vector<float> x = part<float>(0, 5), before = x;
  c.allreduce_sum(x.data(), x.size());
  EXPECT_EQ(x, before);
  std::string s = "kept";
  broadcast_string(c, s);
  EXPECT_EQ(s, "kept");
}

TEST(Comm, WorldIsOneProcessUnlessLaunched) {
  Comm& w = world();
  if (w.size() == 1) {
    EXPECT_STREQ(w.kind(), "single");
  }
  EXPECT_GE(w.rank(), 0);
  EXPECT_LT(w.rank(), w.size());
  EXPECT_LE(w.local_size(), w.size());
}

// Sizes below, at and across the 2^20-value chunks of the sum.
TEST(Comm, SumIsInRankOrderOnEveryRank) {
  for (size_t n : {size_t(1), size_t(1000), (size_t(1) << 20) + 3}) {
    expect_rank_order_sum<float>(world(), n);
    expect_rank_order_sum<double>(world(), n);
  }
}

// Started sums, polled in between and finished together, deliver to each one's owner the same
// bits as the sum in rank order: small ones, one across a chunk boundary, and more than a rank
// stages at once (the later receives wait for room).
TEST(Comm, StartedSumsReachTheirOwnersInRankOrder) {
  Comm& w = world();
  const std::vector<size_t> sizes = {1, 1000, (size_t(1) << 20) + 3, size_t(7) << 20, size_t(5) << 20, 17};
  std::vector<std::vector<float>> xs;
  for (size_t k = 0; k < sizes.size(); ++k) xs.push_back(part<float>(w.rank() + int(k), sizes[k]));
  for (size_t k = 0; k < sizes.size(); ++k) {
    w.start_sum_to(xs[k].data(), sizes[k], int(k) % w.size());
    w.poll_sums();
  }
  w.finish_sums();
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (int(k) % w.size() != w.rank()) continue;
    std::vector<float> want = part<float>(int(k), sizes[k]);
    for (int r = 1; r < w.size(); ++r) {
      const std::vector<float> p = part<float>(r + int(k), sizes[k]);
      for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] + p[i];
    }
    EXPECT_EQ(0, std::memcmp(xs[k].data(), want.data(), want.size() * sizeof(float)))
        << "sum " << k << " on rank " << w.rank();
  }
  // The Comm is free for other calls again.
  expect_rank_order_sum<float>(w, 1000);
}

TEST(Comm, BroadcastCarriesRootBytes) {
  Comm& w = world();
  std::string s = w.rank() == 0 ? std::string(3 << 20, 'x') + "end" : "other";
  broadcast_string(w, s);
  EXPECT_EQ(s.size(), size_t(3 << 20) + 3);
  EXPECT_EQ(s.substr(s.size() - 3), "end");
  w.barrier();
}

// Every other rank sends rank 0 its own bytes; rank 0 receives them in rank order. The time
// spent inside the calls is counted.
TEST(Comm, PointToPointReachesRankZero) {
  Comm& w = world();
  if (w.size() == 1) GTEST_SKIP() << "one process: nothing to send to";
  const double busy0 = w.busy_seconds();
  if (w.rank() == 0) {
    for (int r = 1; r < w.size(); ++r) {
      std::vector<float> got(1000);
      w.recv(got.data(), got.size() * sizeof(float), r);
      EXPECT_EQ(got, part<float>(r, 1000)) << "from rank " << r;
    }
  } else {
    const std::vector<float> mine = part<float>(w.rank(), 1000);
    w.send(mine.data(), mine.size() * sizeof(float), 0);
  }
  w.barrier();
  EXPECT_GT(w.busy_seconds(), busy0);
}

}  // namespace
}  // namespace nt::dist
