// SPDX-License-Identifier: MIT
// The scaling law's coefficients file, the shipped coefficients, and fit points from run folders.
#include <cmath>
#include <filesystem>

#include "core/check.h"
#include "core/files.h"
#include "experiment/run_record.h"
#include "experiment/scaling_law.h"

namespace nt::experiment {

namespace {

// The shipped file's text, made into a string literal by the build (src/CMakeLists.txt).
const char* const kDefaultLawText =
#include "scaling_law_default.inc"
    ;

nlohmann::json read_object(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail("%s: not a JSON object", path.c_str());
  return j;
}

}  // namespace

nlohmann::json scaling_law_json(const ScalingFit& fit, const std::vector<FitPoint>& points, const std::string& source,
                                const std::string& date) {
  nlohmann::json runs = nlohmann::json::array();
  for (const FitPoint& p : points)
    runs.push_back({{"name", p.name},
                    {"params", p.params},
                    {"tokens", p.tokens},
                    {"val_bpb", p.val_bpb},
                    {"predicted", fit.law.predict(p.params, p.tokens)}});
  const ScalingLaw& l = fit.law;
  return {{"schema", "nanotrain-scaling-law/1"},
          {"law", "val_bpb = E + A / N^alpha + B / D^beta; N = parameters outside the embedding, D = tokens trained"},
          {"E", l.E},
          {"A", l.A},
          {"alpha", l.alpha},
          {"B", l.B},
          {"beta", l.beta},
          {"rmse", fit.rmse},
          {"max_abs_error", fit.max_abs_error},
          {"exponent_at_bound", fit.at_bound},
          {"source", source},
          {"date", date},
          {"runs", runs}};
}

ScalingLaw scaling_law_from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) fail("%s: not a JSON object", what.c_str());
  if (j.value("schema", "") != "nanotrain-scaling-law/1")
    fail("%s: schema must be \"nanotrain-scaling-law/1\"", what.c_str());
  auto get = [&](const char* key, bool positive) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) fail("%s: %s must be a number", what.c_str(), key);
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      fail("%s: %s must be %s and finite", what.c_str(), key, positive ? "positive" : ">= 0");
    return v;
  };
  ScalingLaw l;
  l.E = get("E", false), l.A = get("A", false), l.alpha = get("alpha", true);
  l.B = get("B", false), l.beta = get("beta", true);
  return l;
}

ScalingLaw read_scaling_law(const std::string& path) { return scaling_law_from_json(read_object(path), path); }

const nlohmann::json& default_scaling_law_json() {
  static const nlohmann::json j = nlohmann::json::parse(kDefaultLawText);
  return j;
}

std::vector<FitPoint> load_fit_points(const std::vector<std::string>& paths, std::vector<std::string>& skipped) {
  std::vector<FitPoint> out;
  std::string tokenizer, tokenizer_run;
  for (const RunRecord& r : load_runs(paths)) {
    if (r.state != RunState::kDone || !std::isfinite(r.val_bpb)) {
      skipped.push_back(r.name + " (" + (r.state == RunState::kDone ? "no val_bpb" : run_state_name(r.state)) + ")");
      continue;
    }
    const std::string dir = r.dir;
    const nlohmann::json summary = read_object((std::filesystem::path(dir) / "summary.json").string());
    const nlohmann::json config = read_object((std::filesystem::path(dir) / "config.json").string());
    const std::string tok = config.value("tokenizer_id", "");
    if (tokenizer_run.empty()) tokenizer = tok, tokenizer_run = r.name;
    if (tok != tokenizer)
      fail("%s: trained on other data than %s (another tokenizer); fit runs of one data set", dir.c_str(),
           tokenizer_run.c_str());
    FitPoint p;
    p.name = r.name.empty() ? dir : r.name;
    p.params = summary.value("params_matmul", 0.0);
    p.tokens = double(r.tokens);
    p.val_bpb = r.val_bpb;
    if (!(p.params > 0 && p.tokens > 0)) {
      skipped.push_back(p.name + " (no parameter or token count)");
      continue;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace nt::experiment
