// SPDX-License-Identifier: MIT
#include "experiment/settings.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "train/train_config.h"

namespace nt::experiment {

namespace {

// "shape/depth" -> "depth": every TrainConfig field's JSON path and its flag, from the one
// declaration (a field that has no flag shows under its key, '_' as '-').
void collect_flags(auto& s, const std::string& prefix, std::map<std::string, std::string>& out) {
  s.for_each_field([&](auto& value, const FieldInfo& f) {
    if (!f.key) return;
    const std::string path = prefix + f.key;
    if constexpr (HasFields<std::remove_cvref_t<decltype(value)>>) {
      collect_flags(value, path + "/", out);
    } else {
      std::string name = f.flag ? std::string(f.flag + 2) : std::string(f.key);
      std::replace(name.begin(), name.end(), '_', '-');
      out[path] = name;
    }
  });
}

const std::map<std::string, std::string>& flag_names() {
  static const std::map<std::string, std::string> names = [] {
    std::map<std::string, std::string> m;
    TrainConfig c;
    collect_flags(c, "", m);
    return m;
  }();
  return names;
}

bool is_unset(const nlohmann::json& v) {
  return (v.is_number() && v.get<double>() == 0) || (v.is_string() && v.get<std::string>().empty()) || v.is_null();
}

// The resolved value config.json keeps under `key`, or null.
nlohmann::json resolved(const nlohmann::json& config, const std::string& key) {
  for (const char* part : {"", "model", "optimizer", "schedule"}) {
    const nlohmann::json* o = *part ? (config.contains(part) ? &config[part] : nullptr) : &config;
    if (!o || !o->is_object()) continue;
    const auto it = o->find(key);
    if (it != o->end() && !it->is_object() && !it->is_array() && !is_unset(*it)) return *it;
  }
  return nullptr;
}

void flatten(const nlohmann::json& config, const nlohmann::json& j, const std::string& prefix, Settings& out) {
  static const std::set<std::string> left_out = {"run-dir", "peak-gflops"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string path = prefix + it.key();
    if (it->is_object()) {
      flatten(config, *it, path + "/", out);
      continue;
    }
    const auto named = flag_names().find(path);
    std::string name = named != flag_names().end() ? named->second : it.key();
    if (named == flag_names().end()) std::replace(name.begin(), name.end(), '_', '-');
    if (left_out.count(name)) continue;
    const nlohmann::json fill = is_unset(*it) ? resolved(config, it.key()) : nlohmann::json(nullptr);
    out[name] = setting_text(fill.is_null() ? *it : fill);
  }
}

}  // namespace

std::string setting_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v.get<double>());
    return b;
  }
  return v.dump();
}

Settings settings_from_config(const nlohmann::json& config) {
  Settings out;
  if (config.is_object() && config.contains("flags") && config["flags"].is_object())
    flatten(config, config["flags"], "", out);
  return out;
}

std::vector<std::string> differing_keys(const std::vector<const Settings*>& runs) {
  std::set<std::string> keys;
  for (const Settings* s : runs)
    for (const auto& [k, v] : *s) keys.insert(k);
  std::vector<std::string> out;
  for (const std::string& k : keys) {
    const std::string* first = nullptr;
    bool differ = false;
    for (const Settings* s : runs) {
      const auto it = s->find(k);
      static const std::string missing = "-";
      const std::string& v = it == s->end() ? missing : it->second;
      if (!first)
        first = &v;
      else if (v != *first)
        differ = true;
    }
    if (differ) out.push_back(k);
  }
  return out;
}

std::string settings_label(const Settings& s, const std::vector<std::string>& keys) {
  if (keys.empty()) return "(baseline)";
  std::string out;
  for (const std::string& k : keys) {
    const auto it = s.find(k);
    out += (out.empty() ? "" : " ") + k + "=" + (it == s.end() ? "-" : it->second);
  }
  return out;
}

}  // namespace nt::experiment
