// SPDX-License-Identifier: MIT
// core.yaml and the bundle as a whole; the JSONL items and the CSV are in bundle_items.cc.
#include "eval/core/bundle.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/check.h"
#include "core/files.h"
#include "core/sha256.h"

namespace nt {

const char* core_task_type_name(CoreTaskType t) {
  switch (t) {
    case CoreTaskType::kMultipleChoice:
      return "multiple_choice";
    case CoreTaskType::kSchema:
      return "schema";
    case CoreTaskType::kLanguageModeling:
      return "language_modeling";
  }
  return "?";
}

namespace {

CoreTaskType parse_type(const CoreTaskSpec& s, const std::string& path) {
  if (s.type == "multiple_choice") return CoreTaskType::kMultipleChoice;
  if (s.type == "schema") return CoreTaskType::kSchema;
  if (s.type == "language_modeling") return CoreTaskType::kLanguageModeling;
  fail("%s:%d: task '%s': unknown icl_task_type '%s' (multiple_choice, schema, language_modeling)", path.c_str(),
       s.line, s.label.c_str(), s.type.c_str());
}

// A scalar string field of a task entry; `dflt` when absent (nullptr: required).
std::string yaml_string(const YAML::Node& task, const char* key, const char* dflt, const std::string& path, int line) {
  const YAML::Node v = task[key];
  if (!v) {
    if (dflt) return dflt;
    fail("%s:%d: task entry has no '%s'", path.c_str(), line, key);
  }
  if (!v.IsScalar()) fail("%s:%d: '%s' must be a string", path.c_str(), v.Mark().line + 1, key);
  return v.Scalar();
}

int yaml_shots(const YAML::Node& task, const std::string& path, int line) {
  const YAML::Node v = task["num_fewshot"];
  if (!v) fail("%s:%d: task entry has no 'num_fewshot'", path.c_str(), line);
  const int at = v.Mark().line + 1;
  if (!v.IsSequence() || v.size() == 0)
    fail("%s:%d: 'num_fewshot' must be a non-empty list, e.g. [0]", path.c_str(), at);
  int k = -1;
  try {
    k = v[0].as<int>();
  } catch (const YAML::Exception&) {
    fail("%s:%d: 'num_fewshot' must hold integers", path.c_str(), at);
  }
  if (k < 0 || k > 1000) fail("%s:%d: 'num_fewshot' %d must lie in [0, 1000]", path.c_str(), at, k);
  return k;
}

// A relative path inside eval_data/: no absolute paths, no "..".
void check_uri(const CoreTaskSpec& s, const std::string& path) {
  const std::filesystem::path p(s.dataset_uri);
  bool up = false;
  for (const auto& part : p) up |= part == "..";
  if (s.dataset_uri.empty() || p.is_absolute() || up)
    fail("%s:%d: task '%s': dataset_uri '%s' must be a relative path inside eval_data/", path.c_str(), s.line,
         s.label.c_str(), s.dataset_uri.c_str());
}

}  // namespace

std::vector<CoreTaskSpec> parse_core_yaml(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail("%s:%d: not valid YAML: %s", path.c_str(), e.mark.line + 1, e.msg.c_str());
  }
  if (!root.IsMap() || !root["icl_tasks"]) fail("%s:1: has no 'icl_tasks' list", path.c_str());
  const YAML::Node list = root["icl_tasks"];
  if (!list.IsSequence()) fail("%s:%d: 'icl_tasks' must be a list", path.c_str(), list.Mark().line + 1);
  std::vector<CoreTaskSpec> out;
  std::set<std::string> labels;
  for (const YAML::Node& t : list) {
    const int line = t.Mark().line + 1;
    if (!t.IsMap()) fail("%s:%d: a task entry must be a mapping", path.c_str(), line);
    CoreTaskSpec s;
    s.line = line;
    s.label = yaml_string(t, "label", nullptr, path, line);
    s.type = yaml_string(t, "icl_task_type", nullptr, path, line);
    s.dataset_uri = yaml_string(t, "dataset_uri", nullptr, path, line);
    s.delimiter = yaml_string(t, "continuation_delimiter", " ", path, line);
    s.shots = yaml_shots(t, path, line);
    if (s.label.empty()) fail("%s:%d: empty task label", path.c_str(), line);
    if (!labels.insert(s.label).second) fail("%s:%d: task '%s' is listed twice", path.c_str(), line, s.label.c_str());
    parse_type(s, path);
    check_uri(s, path);
    out.push_back(std::move(s));
  }
  if (out.empty()) fail("%s:%d: 'icl_tasks' is empty", path.c_str(), list.Mark().line + 1);
  return out;
}

CoreBundle read_bundle(const std::string& dir, const BundleOptions& opt) {
  namespace fs = std::filesystem;
  const std::string yaml_path = (fs::path(dir) / "core.yaml").string();
  const std::string csv_path = (fs::path(dir) / "eval_meta_data.csv").string();
  if (!fs::is_directory(dir)) fail("--bundle %s: not a folder", dir.c_str());
  const std::string yaml_text = read_file(yaml_path), csv_text = read_file(csv_path);
  const auto specs = parse_core_yaml(yaml_text, yaml_path);
  const auto baselines = parse_baselines_csv(csv_text, csv_path);
  for (const auto& want : opt.tasks) {
    if (std::none_of(specs.begin(), specs.end(), [&](const CoreTaskSpec& s) { return s.label == want; }))
      fail("--tasks: '%s' is not a task of %s", want.c_str(), yaml_path.c_str());
  }
  CoreBundle b;
  b.dir = dir;
  std::string sums = to_hex(sha256(yaml_text)) + "  core.yaml\n" + to_hex(sha256(csv_text)) + "  eval_meta_data.csv\n";
  for (const auto& s : specs) {
    if (!opt.tasks.empty() && std::find(opt.tasks.begin(), opt.tasks.end(), s.label) == opt.tasks.end()) continue;
    CoreTask t;
    t.label = s.label;
    t.dataset_uri = s.dataset_uri;
    t.delimiter = s.delimiter;
    t.type = parse_type(s, yaml_path);
    t.shots = s.shots;
    const auto it =
        std::find_if(baselines.rbegin(), baselines.rend(), [&](const auto& p) { return p.first == s.label; });
    if (it == baselines.rend())
      fail("%s: task '%s' (%s:%d) has no row with its random baseline", csv_path.c_str(), s.label.c_str(),
           yaml_path.c_str(), s.line);
    t.baseline = it->second;
    t.path = (fs::path(dir) / "eval_data" / s.dataset_uri).string();
    if (!fs::exists(t.path))
      fail("%s: not found (dataset_uri of task '%s', %s:%d)", t.path.c_str(), s.label.c_str(), yaml_path.c_str(),
           s.line);
    const std::string data = read_file(t.path);
    sums += to_hex(sha256(data)) + "  eval_data/" + s.dataset_uri + "\n";
    t.items = parse_task_items(data, t.path, t.type, opt);
    if (t.items.empty()) fail("%s: task '%s' has no items", t.path.c_str(), s.label.c_str());
    b.tasks.push_back(std::move(t));
  }
  b.checksum = to_hex(sha256(sums));
  return b;
}

}  // namespace nt
