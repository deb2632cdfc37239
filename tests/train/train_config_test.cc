// SPDX-License-Identifier: MIT
// The training settings declared once (train/train_config.h): every field survives the JSON
// round trip a checkpoint makes, older JSON still reads, the JSON keys and flags stay the
// ones run folders and scripts use, and bad values are one-line errors naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cli/field_options.h"
#include "train/train_config.h"

namespace nt {
namespace {

// Gives every stored field a value different from its default (and from every other field's).
struct Perturb {
  int n = 0;
  template <class T>
  void operator()(T& value, const FieldInfo& f) {
    ++n;
    if constexpr (HasFields<T>) {
      value.for_each_field(*this);
    } else if constexpr (std::is_same_v<T, bool>) {
      value = !value;
    } else if constexpr (std::is_same_v<T, std::string>) {
      value = std::string("v") + std::to_string(n) + (f.key ? f.key : "");
    } else if constexpr (std::is_floating_point_v<T>) {
      value = T(n) + 0.25;
    } else {
      value = T(n + 100);
    }
  }
};

template <class S>
std::vector<std::string> flags_of(S& s) {
  std::vector<std::string> out;
  s.for_each_field([&](auto& value, const FieldInfo& f) {
    if constexpr (HasFields<std::remove_cvref_t<decltype(value)>>) {
      for (auto& x : flags_of(value)) out.push_back(x);
    } else if (f.flag) {
      out.push_back(f.flag);
    }
  });
  return out;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TrainConfig, JsonRoundTripKeepsEveryField) {
  TrainConfig c;
  Perturb p;
  c.for_each_field(p);
  const nlohmann::json j = c.to_json();
  ASSERT_NE(j, TrainConfig().to_json());
  const TrainConfig d = TrainConfig::from_json(j);
  EXPECT_EQ(d.to_json(), j);
  // Field by field, through the visitor: nothing the JSON stores is lost.
  EXPECT_EQ(d.shape.rope_base, c.shape.rope_base);
  EXPECT_EQ(d.optim.ns_steps, c.optim.ns_steps);
  EXPECT_EQ(d.schedule.final_lr_frac, c.schedule.final_lr_frac);
  EXPECT_EQ(d.seed, c.seed);
  EXPECT_EQ(d.sample_prompt, c.sample_prompt);
  EXPECT_EQ(d.profile, c.profile);
  // Per-invocation settings are not part of a run's stored settings.
  EXPECT_FALSE(j.contains("quiet"));
  EXPECT_FALSE(j.contains("resume"));
}

TEST(TrainConfig, JsonKeysAreTheStoredOnes) {
  const nlohmann::json j = TrainConfig().to_json();
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  const std::set<std::string> want = {
      "data_dir", "run_dir", "device", "dtype", "profile", "shape", "optim", "schedule", "time_budget", "steps",
      "batch_size", "total_batch_tokens", "seed", "packing", "eval_every", "eval_tokens", "eval_batch_size", "threads",
      "peak_gflops", "sample_tokens", "sample_prompt", "save_every", "keep_checkpoints", "on_nan", "core_every",
      "core_bundle", "core_max_per_task"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["shape"].size(), 19u);  // 9 shape fields and the 10 model variants
  EXPECT_EQ(j["optim"].size(), 36u);
  EXPECT_EQ(j["schedule"].size(), 5u);
  EXPECT_TRUE(j["optim"].contains("eps"));
  EXPECT_TRUE(j["optim"].contains("momentum"));
}

TEST(TrainConfig, OlderJsonWithoutDtypeOrProfileReads) {
  nlohmann::json j = TrainConfig().to_json();
  j["steps"] = 7;
  j.erase("dtype");
  j.erase("profile");
  const TrainConfig c = TrainConfig::from_json(j);
  EXPECT_EQ(c.steps, 7);
  EXPECT_EQ(c.dtype, "");
  EXPECT_FALSE(c.profile);
}

TEST(TrainConfig, OlderJsonWithoutCoreSettingsReads) {
  nlohmann::json j = TrainConfig().to_json();
  for (const char* key : {"core_every", "core_bundle", "core_max_per_task"}) j.erase(key);
  const TrainConfig c = TrainConfig::from_json(j);
  EXPECT_EQ(c.core_every, "0");
  EXPECT_EQ(c.core_bundle, "");
  EXPECT_EQ(c.core_max_per_task, 500);
}

TEST(TrainConfig, CoreSettingsParseAndValidate) {
  auto cfg = std::make_shared<TrainConfig>();
  CLI::App app{"t"};
  cli::add_field_options(&app, *cfg);
  app.parse("--core-every 10m --core-bundle eval_bundle --core-max-per-task 50", false);
  EXPECT_EQ(cfg->core_every, "10m");
  EXPECT_EQ(cfg->core_bundle, "eval_bundle");
  EXPECT_EQ(cfg->core_max_per_task, 50);
  EXPECT_NO_THROW(cfg->validate());
  EXPECT_EQ(app.get_option("--core-every")->get_group(), "Evaluation and output");
  cfg->core_max_per_task = 0;  // every item
  EXPECT_NO_THROW(cfg->validate());
  TrainConfig c;
  c.core_bundle = "eval_bundle";  // CORE at the end only
  EXPECT_NO_THROW(c.validate());
  const std::vector<std::pair<std::function<void(TrainConfig&)>, std::string>> cases = {
      {[](TrainConfig& c) { c.core_every = "25"; }, "--core-every 25: needs --core-bundle"},
      {[](TrainConfig& c) { c.core_every = "5x", c.core_bundle = "b"; }, "--core-every 5x: expected 0, a step count"},
      {[](TrainConfig& c) { c.core_every = "-3", c.core_bundle = "b"; }, "--core-every -3: expected 0, a step count"},
      {[](TrainConfig& c) { c.core_max_per_task = -1; }, "--core-max-per-task -1: must be >= 0"},
  };
  for (const auto& [set, want] : cases) {
    TrainConfig c;
    set(c);
    const std::string err = error_of([&] { c.validate(); });
    EXPECT_NE(err.find(want), std::string::npos) << "want '" << want << "', got '" << err << "'";
  }
}

TEST(TrainConfig, MissingOrMistypedJsonIsAnError) {
  nlohmann::json j = TrainConfig().to_json();
  j.erase("steps");
  EXPECT_NE(error_of([&] { TrainConfig::from_json(j); }).find("training configuration"), std::string::npos);
  j = TrainConfig().to_json();
  j["optim"]["beta1"] = "high";
  EXPECT_NE(error_of([&] { TrainConfig::from_json(j); }).find("training configuration"), std::string::npos);
}

TEST(TrainConfig, OutOfRangeValuesNameTheFlag) {
  const std::vector<std::pair<std::function<void(TrainConfig&)>, std::string>> cases = {
      {[](TrainConfig& c) { c.batch_size = -3; }, "--batch-size -3: must be positive"},
      {[](TrainConfig& c) { c.steps = -1; }, "--steps -1: must be positive"},
      {[](TrainConfig& c) { c.threads = -2; }, "--threads -2: must be >= 0"},
      {[](TrainConfig& c) { c.keep_checkpoints = 0; }, "--keep-checkpoints 0: must be at least 1"},
      {[](TrainConfig& c) { c.peak_gflops = -1.5; }, "--peak-gflops -1.5: must be positive"},
      {[](TrainConfig& c) { c.on_nan = "retry"; }, "--on-nan retry: expected stop or rollback"},
      {[](TrainConfig& c) { c.packing = "pack"; }, "--packing pack: expected bestfit or stream"},
      {[](TrainConfig& c) { c.eval_every = "often"; }, "--eval-every often: expected 0, a step count"},
      {[](TrainConfig& c) { c.schedule.warmup_frac = 2; }, "--warmup-frac 2: must be in [0, 1]"},
      {[](TrainConfig& c) { c.optim.beta2 = 1; }, "--beta2 1: must be in [0, 1)"},
      {[](TrainConfig& c) { c.optim.lr_matrix = INFINITY; }, "--lr-matrix inf: must be >= 0"},
      {[](TrainConfig& c) { c.optim.lr_embed = NAN; }, "--lr-embed nan: must be >= 0"},
      {[](TrainConfig& c) { c.optim.ns_steps = 101; }, "--ns-steps 101: must be in [0, 100]"},
      {[](TrainConfig& c) { c.time_budget = "-5m"; }, "--time-budget -5m: expected a positive duration"},
  };
  for (const auto& [set, want] : cases) {
    TrainConfig c;
    set(c);
    const std::string err = error_of([&] { c.validate(); });
    EXPECT_NE(err.find(want), std::string::npos) << "want '" << want << "', got '" << err << "'";
  }
}

TEST(TrainConfig, DefaultsAndSentinelsValidate) {
  TrainConfig c;
  EXPECT_NO_THROW(c.validate());
  c.optim.lr_embed = -5;  // negative: the d_model-scaled default, as before
  c.time_budget = "bogus";
  c.steps = 10;  // a step-count run ignores the budget
  EXPECT_NO_THROW(c.validate());
}

TEST(TrainConfig, CommandLineOptionsComeFromTheFields) {
  auto cfg = std::make_shared<TrainConfig>();
  CLI::App app{"t"};
  cli::add_field_options(&app, *cfg);
  std::vector<std::string> want = flags_of(*cfg);
  EXPECT_EQ(want.size(), 88u);  // every flag of `train --help`
  for (const auto& flag : want) EXPECT_NE(app.get_option_no_throw(flag), nullptr) << flag;
  app.parse("--rope-base 500 --muon-momentum 0.9 --quiet --warmup-frac 0.1 --batch-size 8 --on-nan rollback --seed 3",
            false);
  EXPECT_EQ(cfg->shape.rope_base, 500);
  EXPECT_EQ(cfg->optim.momentum, 0.9);
  EXPECT_TRUE(cfg->quiet);
  EXPECT_EQ(cfg->schedule.warmup_frac, 0.1);
  EXPECT_EQ(cfg->batch_size, 8);
  EXPECT_EQ(cfg->on_nan, "rollback");
  EXPECT_EQ(cfg->seed, 3u);
  EXPECT_EQ(app.get_option("--batch-size")->get_group(), "Optimization");
  EXPECT_EQ(app.get_option("--depth")->get_group(), "Model");
}

TEST(TrainConfig, CommandLineRefusesNonPositiveSizes) {
  TrainConfig cfg;
  CLI::App app{"t"};
  cli::add_field_options(&app, cfg);
  try {
    app.parse("--batch-size -3", false);
    FAIL() << "accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("--batch-size: -3: must be positive"), std::string::npos) << e.what();
  }
}

TEST(TrainConfig, OnlyPerInvocationFlagsGoWithResume) {
  TrainConfig cfg;
  const std::vector<std::string> flags = cli::resume_flags(cfg);
  EXPECT_EQ(std::set<std::string>(flags.begin(), flags.end()),
            (std::set<std::string>{"--threads", "--quiet", "--resume", "--tensorboard"}));
}

TEST(TrainConfig, ResumeTakesOnlyThePerInvocationSettings) {
  TrainConfig stored, given;
  stored.steps = 40, stored.threads = 2;
  given.steps = 5, given.threads = 3, given.quiet = true, given.shape.depth = 9, given.resume = "runs/x";
  copy_fields_if(stored, given, [](const FieldInfo& f) { return f.resume_may_change; });
  EXPECT_EQ(stored.steps, 40);
  EXPECT_EQ(stored.shape.depth, 0);
  EXPECT_EQ(stored.threads, 3);
  EXPECT_TRUE(stored.quiet);
  EXPECT_EQ(stored.resume, "runs/x");
}

}  // namespace
}  // namespace nt
