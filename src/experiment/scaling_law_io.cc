// SPDX-License-Identifier: MIT
// The scaling law's coefficients file, the shipped coefficients, and fit points from run folders
// and from other coefficients files.
#include <cmath>
#include <filesystem>
#include <set>

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
                    {"unique_tokens", p.unique_tokens},
                    {"val_bpb", p.val_bpb},
                    {"predicted", fit.law.predict(p.params, p.tokens, p.unique_tokens)}});
  const ScalingLaw& l = fit.law;
  // The training data's size where every run names the same (one data set, as the law assumes).
  double unique = points.empty() ? 0 : points[0].unique_tokens;
  for (const FitPoint& p : points)
    if (p.unique_tokens != unique) unique = 0;
  return {{"schema", "nanotrain-scaling-law/1"},
          {"law",
           "val_bpb = E + A / N^alpha + B / D^beta + C * max(0, D / U - 1); N = parameters outside the embedding, D = "
           "tokens trained, U = tokens in the training data"},
          {"E", l.E},
          {"A", l.A},
          {"alpha", l.alpha},
          {"B", l.B},
          {"beta", l.beta},
          {"C", l.C},
          {"data_train_tokens", unique},
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
    if (it == j.end() && std::string(key) == "C") return 0.0;  // files fit before the repetition term
    if (it == j.end() || !it->is_number()) fail("%s: %s must be a number", what.c_str(), key);
    const double v = it->get<double>();
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      fail("%s: %s must be %s and finite", what.c_str(), key, positive ? "positive" : ">= 0");
    return v;
  };
  ScalingLaw l;
  l.E = get("E", false), l.A = get("A", false), l.alpha = get("alpha", true);
  l.B = get("B", false), l.beta = get("beta", true);
  l.C = get("C", false);
  return l;
}

ScalingLaw read_scaling_law(const std::string& path) { return scaling_law_from_json(read_object(path), path); }

const nlohmann::json& default_scaling_law_json() {
  static const nlohmann::json j = nlohmann::json::parse(kDefaultLawText);
  return j;
}

namespace {

// The training data's tokens for a run: its config's data_train_tokens, else the data.json of its
// data_dir when that folder holds the run's tokenizer; 0 when neither says.
double run_unique_tokens(const nlohmann::json& config) {
  if (const auto it = config.find("data_train_tokens"); it != config.end() && it->is_number()) return it->get<double>();
  const auto dir = config.find("data_dir");
  if (dir == config.end() || !dir->is_string()) return 0;
  const std::filesystem::path meta = std::filesystem::path(dir->get<std::string>()) / "data.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(meta, ec)) return 0;
  const nlohmann::json d = nlohmann::json::parse(read_file(meta.string()), nullptr, false);
  if (!d.is_object() || d.value("tokenizer_id", "") != config.value("tokenizer_id", "x")) return 0;
  const auto n = d.find("train_tokens");
  return n != d.end() && n->is_number() ? n->get<double>() : 0;
}

// A coefficients file's runs as fit points: the runs a law was fit to, so that a refit can add runs
// of its own to them. A run without unique_tokens takes the file's data_train_tokens (0 if none).
std::vector<FitPoint> file_fit_points(const std::string& path) {
  const nlohmann::json j = read_object(path);
  scaling_law_from_json(j, path);  // the schema and the coefficients, checked
  const auto runs = j.find("runs");
  if (runs == j.end() || !runs->is_array()) fail("%s: runs must be a list", path.c_str());
  const double file_unique = j.value("data_train_tokens", 0.0);
  std::vector<FitPoint> out;
  for (size_t i = 0; i < runs->size(); ++i) {
    const nlohmann::json& r = (*runs)[i];
    auto num = [&](const char* key) {
      if (!r.is_object() || !r.contains(key) || !r[key].is_number())
        fail("%s: runs[%zu].%s must be a number", path.c_str(), i, key);
      return r[key].get<double>();
    };
    FitPoint p;
    p.name = r.is_object() && r.contains("name") && r["name"].is_string() ? r["name"].get<std::string>()
                                                                          : strf("%s#%zu", path.c_str(), i);
    p.params = num("params"), p.tokens = num("tokens"), p.val_bpb = num("val_bpb");
    p.unique_tokens = r.contains("unique_tokens") ? num("unique_tokens") : file_unique;
    out.push_back(p);
  }
  return out;
}

}  // namespace

std::vector<FitPoint> load_fit_points(const std::vector<std::string>& paths, std::vector<std::string>& skipped) {
  std::vector<FitPoint> out;
  std::vector<std::string> folders;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) {
      const std::vector<FitPoint> more = file_fit_points(path);
      out.insert(out.end(), more.begin(), more.end());
    } else {
      folders.push_back(path);
    }
  }
  if (folders.empty()) return out;
  const size_t from_files = out.size();
  std::string tokenizer, tokenizer_run;
  for (const RunRecord& r : load_runs(folders)) {
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
    p.unique_tokens = run_unique_tokens(config);
    if (!(p.params > 0 && p.tokens > 0)) {
      skipped.push_back(p.name + " (no parameter or token count)");
      continue;
    }
    out.push_back(p);
  }
  // A run both listed in a file and given as a folder counts once, as the folder's record.
  std::set<std::string> folder_runs;
  for (size_t i = from_files; i < out.size(); ++i) folder_runs.insert(out[i].name);
  std::vector<FitPoint> merged;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i < from_files && folder_runs.count(out[i].name))
      skipped.push_back(out[i].name + " (listed in a file and given as a folder: counted once)");
    else
      merged.push_back(out[i]);
  }
  return merged;
}

}  // namespace nt::experiment
