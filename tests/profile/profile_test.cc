// SPDX-License-Identifier: MIT
// The profiler: zones off cost nothing and record nothing; on, they nest, split ops by phase,
// and the trace is valid Chrome trace-event JSON with one track per thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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

}  // namespace
}  // namespace nt
