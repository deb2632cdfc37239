// SPDX-License-Identifier: MIT
// `nanotrain bench` under mpirun: the link between rank 0 and rank 1 (latency and bandwidth of
// point-to-point messages through the job's communication layer) and the all-reduce of every
// rank: the alpha and beta of the usual cost models (t = alpha + bytes x beta), which
// bench/scaleup.py turns into predictions for larger jobs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cli/bench.h"
#include "dist/comm.h"
#include "train/step_timing.h"

namespace nt::cli::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Round trips of `bytes` between ranks 0 and 1 (the others skip), median of `reps` after 2 warm-ups.
double round_trip(dist::Comm& c, std::vector<char>& buf, size_t bytes, int reps) {
  std::vector<double> t;
  for (int r = -2; r < reps; ++r) {
    const auto t0 = Clock::now();
    if (c.rank() == 0) {
      c.send(buf.data(), bytes, 1);
      c.recv(buf.data(), 1, 1);
    } else if (c.rank() == 1) {
      c.recv(buf.data(), bytes, 0);
      c.send(buf.data(), 1, 0);
    }
    if (r >= 0) t.push_back(seconds_since(t0));
  }
  return median(t);
}

}  // namespace

void run_comm_table(nlohmann::json& out) {
  dist::Comm& c = dist::world();
  constexpr size_t kBig = size_t(64) << 20;
  std::vector<char> buf(kBig);
  c.barrier();
  // Latency: half a round trip of 1 byte. Bandwidth: a large message one way, less the 1-byte
  // answer's half trip and its own start.
  const double rtt = round_trip(c, buf, 1, 50);
  const double alpha = rtt / 2;
  const double big = round_trip(c, buf, kBig, 5);
  const double beta = std::max(big - 2 * alpha, 1e-9) / double(kBig);
  std::vector<float> sum(kBig / sizeof(float), 1.0f);
  std::vector<double> t_small, t_big;
  for (int r = -1; r < 5; ++r) {
    c.barrier();
    auto t0 = Clock::now();
    c.allreduce_sum(sum.data(), 1);
    if (r >= 0) t_small.push_back(seconds_since(t0));
  }
  for (int r = -1; r < 3; ++r) {
    c.barrier();
    auto t0 = Clock::now();
    c.allreduce_sum(sum.data(), sum.size());
    if (r >= 0) t_big.push_back(seconds_since(t0));
  }
  const std::vector<std::string> hosts = dist::rank_hosts(c);
  std::printf("communication (%d ranks; rank 0 on %s, rank 1 on %s):\n", c.size(), hosts[0].c_str(), hosts[1].c_str());
  std::printf("  rank 0 <-> rank 1: latency %.1f us (half a 1-byte round trip), bandwidth %.2f GB/s (64 MiB one way)\n",
              alpha * 1e6, 1e-9 / beta);
  std::printf("  all-reduce of every rank: 4 bytes %.1f us, 64 MiB %.1f ms (%.2f GB/s of data)\n\n",
              median(t_small) * 1e6, median(t_big) * 1e3, double(kBig) / median(t_big) * 1e-9);
  out["comm"] = {{"ranks", c.size()},
                 {"hosts", hosts},
                 {"latency_seconds", alpha},
                 {"seconds_per_byte", beta},
                 {"bandwidth_gbs", 1e-9 / beta},
                 {"allreduce_4b_seconds", median(t_small)},
                 {"allreduce_64mib_seconds", median(t_big)}};
}

}  // namespace nt::cli::bench
