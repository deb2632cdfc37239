// SPDX-License-Identifier: MIT
#include "train/train_state.h"

#include <cmath>

#include "core/check.h"

namespace nt {

namespace {

// The budget's predictor keeps a handful of step times; more means the file was made by hand.
constexpr size_t kMaxRecentSteps = 64;
// Far beyond any run (about 30 years of training) yet small enough to do arithmetic on.
constexpr double kMaxSeconds = 1e9;

}  // namespace

nlohmann::json TrainState::to_json() const {
  return {{"step", step}, {"optimizer_steps", optimizer_steps}, {"tokens", tokens}, {"lr_scale", lr_scale},
          {"loader", loader}, {"train_seconds", train_seconds}, {"recent_step_seconds", recent_step_seconds},
          {"eval_seconds", eval_seconds}, {"save_seconds", save_seconds}, {"data_seconds", data_seconds},
          {"last_eval_at", last_eval_at}, {"last_save_at", last_save_at}, {"core_seconds", core_seconds},
          {"last_core_at", last_core_at}, {"rollbacks", rollbacks},
          {"metrics_lines", metrics_lines}, {"run_id", run_id}, {"tokenizer_id", tokenizer_id}};
}

TrainState TrainState::from_json(const nlohmann::json& j, const std::string& name) {
  const char* n = name.c_str();
  TrainState s;
  auto count = [&](const char* key) {
    const auto& v = j.at(key);
    if (!v.is_number_integer()) fail("%s: checkpoint state: \"%s\" is not an integer", n, key);
    const int64_t x = v.get<int64_t>();
    if (x < 0) fail("%s: checkpoint state: \"%s\" is negative (%lld)", n, key, (long long)x);
    return x;
  };
  auto seconds = [&](const char* key, const nlohmann::json& v) {
    if (!v.is_number()) fail("%s: checkpoint state: \"%s\" is not a number", n, key);
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || x > kMaxSeconds)
      fail("%s: checkpoint state: \"%s\" = %g is not a duration in seconds", n, key, x);
    return x;
  };
  try {
    if (!j.is_object()) fail("%s: checkpoint state is not a JSON object", n);
    s.step = count("step");
    s.optimizer_steps = count("optimizer_steps");
    if (j.contains("tokens") && j["tokens"] != -1) s.tokens = count("tokens");
    s.rollbacks = count("rollbacks");
    s.metrics_lines = count("metrics_lines");
    const auto& lr = j.at("lr_scale");
    s.lr_scale = lr.is_number() ? lr.get<double>() : NAN;
    if (!(s.lr_scale > 0 && s.lr_scale <= 1)) fail("%s: checkpoint state: \"lr_scale\" must be in (0, 1]", n);
    s.train_seconds = seconds("train_seconds", j.at("train_seconds"));
    s.eval_seconds = seconds("eval_seconds", j.at("eval_seconds"));
    s.save_seconds = seconds("save_seconds", j.at("save_seconds"));
    s.data_seconds = seconds("data_seconds", j.at("data_seconds"));
    s.last_eval_at = seconds("last_eval_at", j.at("last_eval_at"));
    s.last_save_at = seconds("last_save_at", j.at("last_save_at"));
    for (auto [key, field] : {std::pair{"core_seconds", &s.core_seconds}, std::pair{"last_core_at", &s.last_core_at}})
      if (j.contains(key)) *field = seconds(key, j[key]);
    const auto& recent = j.at("recent_step_seconds");
    if (!recent.is_array() || recent.size() > kMaxRecentSteps)
      fail("%s: checkpoint state: \"recent_step_seconds\" must be a list of at most %zu durations", n, kMaxRecentSteps);
    for (const auto& v : recent) s.recent_step_seconds.push_back(seconds("recent_step_seconds", v));
    for (auto [key, field] : {std::pair{"run_id", &s.run_id}, std::pair{"tokenizer_id", &s.tokenizer_id}}) {
      if (!j.contains(key)) continue;
      if (!j[key].is_string() || j[key].get<std::string>().size() > 64)
        fail("%s: checkpoint state: \"%s\" is not an id", n, key);
      *field = j[key].get<std::string>();
    }
    s.loader = j.at("loader");
    if (!s.loader.is_object()) fail("%s: checkpoint state: \"loader\" is not a JSON object", n);
  } catch (const nlohmann::json::exception& e) {
    fail("%s: checkpoint state is incomplete: %s", n, e.what());
  }
  return s;
}

}  // namespace nt
