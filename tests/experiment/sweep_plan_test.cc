// SPDX-License-Identifier: MIT
// A sweep's plan: grid and variant text, sweep files, the expansion into named runs with their
// flags, and each run's flags parsed by the train command's own options.
#include "experiment/sweep_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "cli/train_flags.h"
#include "experiment/sweep_runner.h"
#include "core/check.h"

namespace nt::experiment {
namespace {

using Args = std::vector<std::string>;

TEST(SweepPlan, ParsesAGrid) {
  const auto g = parse_grid("depth=3,4  --lr-matrix=0.01,0.02,0.04 window-pattern=L");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].key, "depth");
  EXPECT_EQ(g[0].values, (Args{"3", "4"}));
  EXPECT_EQ(g[1].key, "lr-matrix");
  EXPECT_EQ(g[1].values.size(), 3u);
  EXPECT_EQ(g[2].values, Args{"L"});
  EXPECT_TRUE(parse_grid("").empty());
  for (const char* bad : {"depth", "=3", "depth=", "depth=3,,4", "depth=3 depth=4"}) {
    try {
      parse_grid(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--grid"), std::string::npos) << e.what();
    }
  }
}

TEST(SweepPlan, ParsesVariantsAndQuotedArguments) {
  const Variant v = parse_variant("wide:--d-model 512 --sample-prompt 'Once upon' --n-head=8");
  EXPECT_EQ(v.name, "wide");
  EXPECT_EQ(v.args, (Args{"--d-model", "512", "--sample-prompt", "Once upon", "--n-head=8"}));
  EXPECT_TRUE(parse_variant("baseline").args.empty());
  EXPECT_THROW(parse_variant("bad name:--depth 3"), Error);
  EXPECT_THROW(parse_variant(":--depth 3"), Error);
  EXPECT_THROW(split_args("--x 'open"), Error);
  EXPECT_EQ(flags_in({"--depth", "3", "--lr-matrix=0.1", "x"}), (Args{"depth", "lr-matrix"}));
}

TEST(SweepPlan, ExpandsEveryCombinationSeedsOutermost) {
  SweepSpec s;
  s.grid = parse_grid("depth=3,4 lr-matrix=0.01,0.02");
  s.variants = {parse_variant("a:"), parse_variant("b:--softcap 0")};
  s.seeds = 3;
  const auto runs = expand_sweep(s, 100);
  ASSERT_EQ(runs.size(), 2u * 4u * 3u);
  std::set<std::string> names;
  for (const auto& r : runs) names.insert(r.name);
  EXPECT_EQ(names.size(), runs.size());
  // The first pass covers every setting with the first seed.
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(runs[i].seed, 100u);
  EXPECT_EQ(runs[8].seed, 101u);
  EXPECT_EQ(runs.back().seed, 102u);
  EXPECT_EQ(runs[0].name, "001_a_depth=3_lr-matrix=0.01_seed=100");
  EXPECT_EQ(runs[0].args, (Args{"--depth=3", "--lr-matrix=0.01", "--seed=100"}));
  EXPECT_EQ(runs[1].grid[1].second, "0.02");  // the last axis varies fastest
  EXPECT_EQ(runs[2].grid[0].second, "4");
  EXPECT_EQ(runs[4].variant, "b");
  EXPECT_EQ(runs[4].args, (Args{"--softcap", "0", "--depth=3", "--lr-matrix=0.01", "--seed=100"}));
}

TEST(SweepPlan, WithoutSeedsOrGridEachVariantRunsOnce) {
  SweepSpec s;
  s.variants = {parse_variant("x:--depth 2"), parse_variant("y:--depth 3")};
  const auto runs = expand_sweep(s, 1337);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "001_x");
  EXPECT_FALSE(runs[0].own_seed);
  EXPECT_EQ(expand_sweep(SweepSpec{}, 1).size(), 1u);
  // Values with characters a folder name should not hold are shown as '-'.
  s = SweepSpec{};
  s.grid = parse_grid("sample-prompt=a/b");
  EXPECT_EQ(expand_sweep(s, 1)[0].name, "001_sample-prompt=a-b");
}

TEST(SweepPlan, RefusesConflicts) {
  SweepSpec s;
  s.grid = parse_grid("depth=3,4");
  s.variants = {parse_variant("deep:--depth 8")};
  EXPECT_THROW(expand_sweep(s, 1), Error);
  SweepSpec t;
  t.grid = parse_grid("seed=1,2");
  t.seeds = 2;
  EXPECT_THROW(expand_sweep(t, 1), Error);
  t.seeds = 0;
  EXPECT_EQ(expand_sweep(t, 1).size(), 2u);
}

TEST(SweepPlan, ReadsASweepFile) {
  const nlohmann::json j = nlohmann::json::parse(R"({
    "grid": {"depth": [3, 4], "lr-matrix": [0.01]},
    "variants": [{"name": "base"}, {"name": "tied", "args": "--tie-embeddings"}],
    "seeds": 2,
    "flags": {"preset": "tiny", "steps": 3}})");
  const SweepSpec s = parse_sweep_file(j, "f.json");
  ASSERT_EQ(s.grid.size(), 2u);
  EXPECT_EQ(s.grid[0].values, (Args{"3", "4"}));
  EXPECT_EQ(s.grid[1].values, Args{"0.01"});
  ASSERT_EQ(s.variants.size(), 2u);
  EXPECT_EQ(s.variants[1].args, Args{"--tie-embeddings"});
  EXPECT_EQ(s.seeds, 2);
  EXPECT_EQ(s.shared_args, (Args{"--preset=tiny", "--steps=3"}));
  const SweepSpec o =
      parse_sweep_file(nlohmann::json::parse(R"({"variants": {"a": "--depth 2"}, "flags": "--steps 3"})"), "g");
  EXPECT_EQ(o.variants[0].args, (Args{"--depth", "2"}));
  EXPECT_EQ(o.shared_args, (Args{"--steps", "3"}));
  for (const char* bad : {R"({"grid": {"depth": []}})", R"({"seeds": 0})", R"({"colour": 1})", R"([1])",
                          R"({"variants": [{"args": "--depth 2"}]})"}) {
    try {
      parse_sweep_file(nlohmann::json::parse(bad), "bad.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  }
}

TEST(SweepPlan, MergesTheCommandLineIntoAFile) {
  SweepSpec file;
  file.grid = parse_grid("depth=3,4");
  file.seeds = 2;
  file.shared_args = {"--steps=3"};
  SweepSpec cli;
  cli.grid = parse_grid("lr-matrix=0.1");
  cli.seeds = 3;
  cli.shared_args = {"--steps=5"};
  merge_specs(file, cli);
  EXPECT_EQ(file.grid.size(), 2u);
  EXPECT_EQ(file.seeds, 3);
  EXPECT_EQ(file.shared_args, (Args{"--steps=3", "--steps=5"}));  // the later one wins when parsed
  SweepSpec again;
  again.grid = parse_grid("depth=5");
  EXPECT_THROW(merge_specs(file, again), Error);
}

TEST(SweepPlan, RunFlagsAreTheTrainCommandsOwn) {
  const TrainConfig c =
      cli::train_config_from_args({"--preset=tiny", "--steps=3", "--depth", "3", "--steps=5", "--profile"}, "run x");
  EXPECT_EQ(c.shape.preset, "tiny");
  EXPECT_EQ(c.shape.depth, 3);
  EXPECT_EQ(c.steps, 5);
  EXPECT_TRUE(c.profile);
  EXPECT_FALSE(cli::train_config_from_args({"--profile=false"}, "run x").profile);
  for (const Args& bad :
       {Args{"--no-such-flag=1"}, Args{"--depth=three"}, Args{"--steps=-1"}, Args{"--on-nan=explode"}}) {
    try {
      cli::train_config_from_args(bad, "run 007_x");
      ADD_FAILURE() << bad[0] << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run 007_x"), std::string::npos) << e.what();
    }
  }
}

// What makes a finished run count as the planned one: its training settings, not where it was
// written, the peak used for MFU, or the flags a resumed run may change.
TEST(SweepPlan, RunIdentity) {
  const TrainConfig a = cli::train_config_from_args({"--preset=tiny", "--lr-matrix=0.02"}, "a");
  TrainConfig b = a;
  b.run_dir = "elsewhere", b.peak_gflops = 123, b.threads = 3, b.quiet = true;
  EXPECT_EQ(run_identity(a), run_identity(b));
  b.optim.lr_matrix = 0.04;
  EXPECT_NE(run_identity(a), run_identity(b));
  TrainConfig c = a;
  c.seed = 7;
  EXPECT_NE(run_identity(a), run_identity(c));
}

}  // namespace
}  // namespace nt::experiment
