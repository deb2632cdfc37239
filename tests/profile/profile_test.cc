// SPDX-License-Identifier: MIT
// The profiler: zones off cost nothing and record nothing; on, they nest, split ops by phase,
// and the trace is valid Chrome trace-event JSON with one track per thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <vector>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "kernels/backend.h"
#include "profile/profile.h"
#include "test_util.h"

namespace nt {
namespace {

TEST(Profile, OffRecordsNothing) {
  profile::reset();
  profile::enable(false);
  { profile::Zone z(profile::kStep); }
  EXPECT_NE(profile::report().find("0 steps"), std::string::npos);
}

TEST(Profile, PhasesOpsAndTrace) {
  profile::reset();
  profile::enable(true);
  for (int s = 0; s < 2; ++s) {
    profile::Zone st(profile::kStep);
    {
      profile::Zone f(profile::kForward);
      profile::Zone a(profile::kAttention);
    }
    {
      profile::Zone b(profile::kBackward);
      profile::Zone a(profile::kAttention);
    }
#pragma omp parallel num_threads(2)
    { profile::Zone m(profile::kMuon); }
  }
  profile::enable(false);
  const std::string r = profile::report(1e9, 100.0, "a 100 GFLOP/s test peak");
  EXPECT_NE(r.find("2 steps"), std::string::npos) << r;
  EXPECT_NE(r.find("forward      attention"), std::string::npos) << r;
  EXPECT_NE(r.find("backward     attention"), std::string::npos) << r;
  EXPECT_NE(r.find("MFU"), std::string::npos) << r;
  const std::string path = test::tmp_dir("profile") + "/trace.json";
  profile::write_trace(path);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  int steps = 0, attn = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    steps += e["name"] == "step";
    attn += e["name"] == "attention";
    EXPECT_GE(e["dur"].get<double>(), 0.0);
  }
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(attn, 4);
}

// The chart: a bar per row of the table, in the table's order, as long as the row's share, with
// the row's figures in its tooltip.
TEST(Profile, ChartHasABarPerRowOfTheTable) {
  profile::reset();
  profile::enable(true);
  auto busy = [](int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
    }
  };
  for (int s = 0; s < 2; ++s) {
    profile::Zone st(profile::kStep);
    {
      profile::Zone f(profile::kForward);
      profile::Zone a(profile::kAttention);
      busy(20);
    }
    {
      profile::Zone b(profile::kBackward);
      profile::Zone m(profile::kMlpUp);
      busy(5);
    }
  }
  profile::enable(false);
  const profile::Totals t = profile::totals();
  ASSERT_EQ(t.steps, 2);
  ASSERT_EQ(t.rows.size(), 4u);  // forward, forward / attention, backward, backward / mlp up gemm
  const std::string svg = profile::chart_svg("a <test> chart", "two steps");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("a &lt;test&gt; chart"), std::string::npos);
  // The bars, with their tooltips, in order; width proportional to the share.
  const std::regex re("<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"[0-9.]+\" "
                      "fill=\"#[0-9a-f]+\"><title>([^<]*)</title>");
  std::vector<std::pair<double, std::string>> bars;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    bars.push_back({std::stod((*it)[1]), (*it)[2]});
  ASSERT_EQ(bars.size(), t.rows.size()) << svg;
  EXPECT_EQ(bars[0].second.rfind("forward: ", 0), 0u) << bars[0].second;
  EXPECT_EQ(bars[1].second.rfind("forward / attention: ", 0), 0u) << bars[1].second;
  EXPECT_EQ(bars[2].second.rfind("backward: ", 0), 0u) << bars[2].second;
  EXPECT_EQ(bars[3].second.rfind("backward / mlp up gemm: ", 0), 0u) << bars[3].second;
  EXPECT_NE(bars[1].second.find(", 2 calls"), std::string::npos) << bars[1].second;
  for (size_t i = 0; i < bars.size(); ++i)
    EXPECT_NEAR(bars[i].first / bars[0].first, t.rows[i].ms / t.rows[0].ms, 0.01) << bars[i].second;
  EXPECT_GT(bars[1].first, 2.5 * bars[3].first);  // 20 ms against 5 ms a step
}

// A kernel's parallel region puts one work slice on each thread's track, and nothing in the table
// beyond the op zone around the call.
TEST(Profile, KernelWorkZonesGiveOneTrackPerThread) {
  const int threads = omp_get_max_threads();
  if (threads < 2) GTEST_SKIP() << "needs 2 OpenMP threads";
  const KernelTable& k = backend_for_device("cpu").kernels();
  const int64_t rows = 4096, dim = 64;
  std::vector<float> x(size_t(rows * dim), 1.5f), y(x.size()), rstd(static_cast<size_t>(rows));
  profile::reset();
  profile::enable(true);
  {
    profile::Zone st(profile::kStep);
    profile::Zone z(profile::kNorm);
    k.rmsnorm_fwd(test_ctx(), y.data(), rstd.data(), x.data(), rows, dim, 1e-6f);
  }
  profile::enable(false);
  const std::string r = profile::report();
  EXPECT_EQ(r.find("rmsnorm fwd"), std::string::npos) << "work zones must stay out of the table\n" << r;
  const std::string path = test::tmp_dir("profile_work") + "/trace.json";
  profile::write_trace(path);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::set<int> tids;
  std::map<int, std::string> names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") names[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X" && e["name"] == "rmsnorm fwd") tids.insert(e["tid"].get<int>());
  }
  EXPECT_EQ(int(tids.size()), threads);
  for (int t : tids) EXPECT_FALSE(names[t].empty()) << "track " << t << " has no thread name";
}

}  // namespace
}  // namespace nt
