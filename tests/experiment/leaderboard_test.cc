// SPDX-License-Identifier: MIT
// Run folders read into records (finished, unfinished and broken ones), the settings that differ,
// grouping over seeds, filters, sorting and the JSON schema of `nanotrain runs --json`.
#include "experiment/leaderboard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "experiment/leaderboard_format.h"
#include "experiment/settings.h"
#include "train/train_config.h"

namespace nt::experiment {
namespace {

namespace fs = std::filesystem;

// config.json as a run writes it: the flags as given, and resolved settings beside them.
nlohmann::json config(int depth_flag, double lr, uint64_t seed) {
  TrainConfig c;
  c.shape.preset = "tiny", c.shape.depth = depth_flag, c.optim.lr_matrix = lr, c.seed = seed;
  c.run_dir = "somewhere/" + std::to_string(seed), c.peak_gflops = double(seed);  // left out of the settings
  return {{"flags", c.to_json()},
          {"model", {{"depth", depth_flag ? depth_flag : 2}, {"d_model", 64}}},
          {"dtype", "fp32"},
          {"batch_size", 16}};
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

void finished(const fs::path& dir, const nlohmann::json& cfg, double bpb, double tps, nlohmann::json core = nullptr) {
  write(dir / "config.json", cfg.dump());
  nlohmann::json s = {{"val_bpb", bpb},       {"tokens_trained", 1000}, {"tokens_per_second", tps},
                      {"mfu", 0.5},           {"params_total", 12345},  {"steps", 10},
                      {"train_seconds", 2.0}, {"final_train_loss", 3.0}};
  if (!core.is_null()) s["core"] = core;
  write(dir / "summary.json", s.dump());
}

TEST(Settings, FlagsByNameWithUnsetOnesResolved) {
  const Settings s = settings_from_config(config(0, 0.02, 7));
  EXPECT_EQ(s.at("depth"), "2");  // not given: the resolved depth
  EXPECT_EQ(s.at("lr-matrix"), "0.02");
  EXPECT_EQ(s.at("seed"), "7");
  EXPECT_EQ(s.at("preset"), "tiny");
  EXPECT_EQ(s.at("dtype"), "fp32");
  EXPECT_EQ(s.at("batch-size"), "16");
  EXPECT_EQ(s.count("run-dir"), 0u);
  EXPECT_EQ(s.count("peak-gflops"), 0u);
  EXPECT_TRUE(settings_from_config(nlohmann::json::object()).empty());
}

TEST(Settings, DifferingKeys) {
  const Settings a = settings_from_config(config(3, 0.02, 1)), b = settings_from_config(config(3, 0.04, 2));
  Settings c = a;
  c["window-pattern"] = "SSSL";  // a flag one run has and the others lack
  EXPECT_EQ(differing_keys({&a, &b}), (std::vector<std::string>{"lr-matrix", "seed"}));
  EXPECT_EQ(differing_keys({&a, &c}), (std::vector<std::string>{"window-pattern"}));
  EXPECT_TRUE(differing_keys({&a}).empty());
  EXPECT_EQ(settings_label(b, {"lr-matrix", "nope"}), "lr-matrix=0.04 nope=-");
}

TEST(Leaderboard, MeanAndSampleSpread) {
  const Stat s = stat_of({1.0, 2.0, 3.0, NAN});
  EXPECT_EQ(s.n, 3);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.spread, 1.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 3.0);
  EXPECT_EQ(stat_of({5.0}).spread, 0.0);
  EXPECT_EQ(stat_of({}).n, 0);
  EXPECT_EQ(stat_text(stat_of({1.0, 2.0, 3.0}), "%.2f"), "2.00 ± 1.00");
  EXPECT_EQ(stat_text(stat_of({}), "%.2f"), "-");
}

class RunFolders : public ::testing::Test {
 protected:
  void SetUp() override {
    root = fs::temp_directory_path() / ("nt_leaderboard_" + std::to_string(::getpid()));
    fs::remove_all(root);
    finished(root / "sweep/a1", config(3, 0.02, 1), 1.50, 900);
    finished(root / "sweep/a2", config(3, 0.02, 2), 1.70, 1100);
    finished(root / "sweep/b1", config(3, 0.04, 1), 1.40, 1000, 0.25);
    finished(root / "sweep/b2", config(3, 0.04, 2), 1.44, 1000, nlohmann::json{{"core", 0.35}});
    write(root / "sweep/a2/core.json", "{\"core\": 0.125, \"tasks\": []}");  // eval core --json RUN/core.json
    // Interrupted: checkpoints, no summary; the figures come from metrics.jsonl's last lines.
    write(root / "sweep/c1/config.json", config(4, 0.02, 1).dump());
    write(root / "sweep/c1/checkpoints/step-00000004.safetensors", "x");
    write(root / "sweep/c1/metrics.jsonl",
          "{\"type\":\"step\",\"step\":4,\"loss\":4.5,\"train_seconds\":2.0,\"tokens\":4096}\n"
          "{\"type\":\"eval\",\"step\":4,\"train_seconds\":2.0,\"val_bpb\":1.9}\nnot json\n");
    write(root / "broken/config.json", "{\"flags\": ");  // broken, searched one level up
    fs::create_directories(root / "empty/nothing");      // not a run
  }
  void TearDown() override { fs::remove_all(root); }
  fs::path root;
};

TEST_F(RunFolders, ReadsEveryKindOfFolder) {
  const auto runs = load_runs({root.string()}, true);
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_EQ(runs[0].name, "broken");
  EXPECT_EQ(runs[0].state, RunState::kBroken);
  EXPECT_NE(runs[0].error.find("config.json"), std::string::npos);
  EXPECT_EQ(runs[1].name, "sweep/a1");
  EXPECT_EQ(runs[1].state, RunState::kDone);
  EXPECT_DOUBLE_EQ(runs[1].val_bpb, 1.50);
  EXPECT_EQ(runs[1].params, 12345);
  EXPECT_TRUE(std::isnan(runs[1].core));
  EXPECT_DOUBLE_EQ(runs[3].core, 0.25);
  EXPECT_DOUBLE_EQ(runs[4].core, 0.35);
  EXPECT_DOUBLE_EQ(runs[2].core, 0.125);
  const RunRecord& c = runs[5];
  EXPECT_EQ(c.state, RunState::kInterrupted);
  EXPECT_DOUBLE_EQ(c.val_bpb, 1.9);
  EXPECT_EQ(c.tokens, 4096);
  EXPECT_EQ(c.steps, 4);
  ASSERT_EQ(c.loss.size(), 1u);
  ASSERT_EQ(c.val_bpb_curve.size(), 1u);
  EXPECT_DOUBLE_EQ(c.val_bpb_curve[0].tokens, 4096);
  // A run folder named directly is itself; a missing path is an error naming it.
  EXPECT_EQ(load_runs({(root / "sweep/a1").string()}).size(), 1u);
  EXPECT_THROW(load_runs({(root / "missing").string()}), Error);
}

TEST_F(RunFolders, GroupsSeedsSortsAndFilters) {
  const Leaderboard lb = make_leaderboard(load_runs({(root / "sweep").string()}), {});
  EXPECT_EQ(lb.differing, (std::vector<std::string>{"depth", "lr-matrix", "seed"}));
  ASSERT_EQ(lb.rows.size(), 3u);
  EXPECT_EQ(lb.rows[0].label, "depth=3 lr-matrix=0.04");
  EXPECT_DOUBLE_EQ(lb.rows[0].val_bpb.mean, 1.42);
  EXPECT_EQ(lb.rows[0].val_bpb.n, 2);
  EXPECT_NEAR(lb.rows[1].val_bpb.mean, 1.60, 1e-12);
  EXPECT_NEAR(lb.rows[1].val_bpb.spread, std::sqrt(0.02), 1e-12);
  EXPECT_EQ(lb.rows[2].state, "interrupted");
  EXPECT_EQ(lb.runs[0].name, "b1");  // runs best first
  EXPECT_EQ(make_leaderboard(load_runs({(root / "sweep").string()}), {.group_seeds = false, .where = {}}).rows.size(),
            5u);

  LeaderOptions by_core{.sort = SortKey::kCore, .where = {}};
  EXPECT_EQ(make_leaderboard(load_runs({(root / "sweep").string()}), by_core).runs[0].name, "b2");
  EXPECT_EQ(make_leaderboard(load_runs({(root / "sweep").string()}), by_core).runs[2].name, "a2");
  LeaderOptions fast{.sort = SortKey::kTokensPerSecond, .group_seeds = false, .where = {}};
  const Leaderboard by_speed = make_leaderboard(load_runs({(root / "sweep").string()}), fast);
  EXPECT_EQ(by_speed.runs[0].name, "c1");  // 4096 tokens in 2 s, from its metrics
  EXPECT_EQ(by_speed.runs[1].name, "a2");

  LeaderOptions where{.where = {parse_where("lr-matrix=0.02"), parse_where("--state=done,running")}};
  const Leaderboard f = make_leaderboard(load_runs({(root / "sweep").string()}), where);
  ASSERT_EQ(f.runs.size(), 2u);
  EXPECT_EQ(f.differing, std::vector<std::string>{"seed"});
  EXPECT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.rows[0].label, "(baseline)");
  EXPECT_THROW(parse_where("depth"), Error);
  EXPECT_THROW(parse_where("=3"), Error);
  EXPECT_THROW(parse_sort_key("speed"), Error);
}

TEST_F(RunFolders, JsonSchema) {
  const nlohmann::json j = leaderboard_json(make_leaderboard(load_runs({(root / "sweep").string()}), {}));
  EXPECT_EQ(j["schema"], "nanotrain-runs/1");
  EXPECT_EQ(j["sort"], "val_bpb");
  for (const char* k : {"differing", "runs", "groups"}) EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["runs"].size(), 5u);
  for (const char* k : {"name", "dir", "state", "val_bpb", "core", "final_loss", "tokens", "tokens_per_second", "mfu",
                        "params", "steps", "train_seconds", "differs", "settings"})
    EXPECT_TRUE(j["runs"][0].contains(k)) << k;
  EXPECT_EQ(j["runs"][0]["differs"].size(), 3u);
  EXPECT_TRUE(j["runs"][0]["core"].is_number());
  EXPECT_TRUE(j["runs"][4]["core"].is_null());
  for (const char* k : {"label", "runs", "state", "val_bpb", "core", "tokens", "tokens_per_second", "mfu", "params"})
    EXPECT_TRUE(j["groups"][0].contains(k)) << k;
  for (const char* k : {"mean", "spread", "min", "max", "n"}) EXPECT_TRUE(j["groups"][0]["val_bpb"].contains(k)) << k;
  const std::string md = leaderboard_markdown(make_leaderboard(load_runs({(root / "sweep").string()}), {}));
  EXPECT_EQ(md.rfind("| # | run |", 0), 0u);
  EXPECT_NE(md.find("| --- |"), std::string::npos);
}

}  // namespace
}  // namespace nt::experiment
