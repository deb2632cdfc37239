// SPDX-License-Identifier: MIT
// The profiler: zones off cost nothing and record nothing; on, they nest, split ops by phase,
// and the trace is valid Chrome trace-event JSON with one track per thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <fstream>
#include <map>
#include <set>
#include <vector>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kernels/kernels.h"
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

// A kernel's parallel region puts one work slice on each thread's track, and nothing in the table
// beyond the op zone around the call.
TEST(Profile, KernelWorkZonesGiveOneTrackPerThread) {
  const int threads = omp_get_max_threads();
  if (threads < 2) GTEST_SKIP() << "needs 2 OpenMP threads";
  const KernelTable& k = kernels_for_device("cpu");
  const int64_t rows = 4096, dim = 64;
  std::vector<float> x(size_t(rows * dim), 1.5f), y(x.size()), rstd(static_cast<size_t>(rows));
  profile::reset();
  profile::enable(true);
  {
    profile::Zone st(profile::kStep);
    profile::Zone z(profile::kNorm);
    k.rmsnorm_fwd(y.data(), rstd.data(), x.data(), rows, dim, 1e-6f);
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
