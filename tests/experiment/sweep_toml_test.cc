// SPDX-License-Identifier: MIT
// Sweep files in TOML: the same plan as the JSON file they mirror, and errors that name the file
// and line of what is wrong.
#include "experiment/sweep_toml.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "test_util.h"

namespace nt::experiment {
namespace {

TEST(SweepToml, GivesTheSamePlanAsJson) {
  const std::string dir = test::tmp_dir("sweep_toml");
  write_file_atomic(dir + "/s.toml", R"(# a sweep
seeds = 2
flags = { preset = "tiny", steps = 3, lr-scalar = 0.5 }
[grid]
depth = [3, 4]
lr-matrix = [0.01, 2e-2]
[variants]
base = ""
tied = ["--tie-embeddings"]
)");
  write_file_atomic(dir + "/s.json", R"({"seeds": 2, "flags": {"preset": "tiny", "steps": 3, "lr-scalar": 0.5},
    "grid": {"depth": [3, 4], "lr-matrix": [0.01, 0.02]}, "variants": {"base": "", "tied": ["--tie-embeddings"]}})");
  const SweepSpec t = read_sweep_file(dir + "/s.toml"), j = read_sweep_file(dir + "/s.json");
  const auto a = expand_sweep(t, 1), b = expand_sweep(j, 1);
  ASSERT_EQ(a.size(), 16u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].args, b[i].args);
  }
  EXPECT_EQ(t.shared_args, j.shared_args);
  EXPECT_EQ(t.shared_args, (std::vector<std::string>{"--lr-scalar=0.5", "--preset=tiny", "--steps=3"}));
}

TEST(SweepToml, ErrorsNameTheFileAndLine) {
  const auto error = [](const std::string& text) {
    return test::error_of([&] {
      const TomlSweepFile f = parse_toml_sweep(text, "s.toml");
      parse_sweep_file(f.json, "s.toml", f.at);
    });
  };
  EXPECT_NE(error("seeds = 2\n[grid]\ndepth = [3,\n").find("s.toml:3:"), std::string::npos);
  EXPECT_NE(error("seeds = 2\nseeds = 3\n").find("s.toml:2:"), std::string::npos);
  EXPECT_NE(error("\n\nseeds = 0\n").find("s.toml:3: \"seeds\" must be"), std::string::npos);
  EXPECT_NE(error("[grid]\n\ndepth = []\n").find("s.toml:3: grid.depth: expected a non-empty"), std::string::npos);
  EXPECT_NE(error("[grid]\ndepth = [3]\nwhen = 1979-05-27\n").find("s.toml:3: a date or time"), std::string::npos);
  EXPECT_NE(error("[grid]\nlr = [inf]\n").find("s.toml:2: inf is not"), std::string::npos);
  EXPECT_NE(error("[[variants]]\nname = \"a b\"\n").find("s.toml:1: variant name"), std::string::npos);
  EXPECT_NE(error("colour = 1\n").find("s.toml:1: unknown key \"colour\""), std::string::npos);
  EXPECT_NE(error("x = " + std::string(100, '[') + std::string(100, ']')).find("s.toml"), std::string::npos);
  EXPECT_NE(error(std::string(kJsonMaxBytes + 1, '#')).find("more than the"), std::string::npos);
}

}  // namespace
}  // namespace nt::experiment
