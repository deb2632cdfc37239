// SPDX-License-Identifier: MIT
#include "experiment/sweep_plan.h"

#include <algorithm>
#include <set>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "experiment/settings.h"
#include "experiment/sweep_toml.h"

namespace nt::experiment {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') out.push_back(s.substr(start, i - start)), start = i + 1;
  return out;
}

bool plain_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// A value as it may appear in a folder name: anything but letters, digits, '.', '-' and '+' as '-'.
std::string name_part(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+') c = '-';
  return out;
}

std::string strip_dashes(std::string key) { return key.rfind("--", 0) == 0 ? key.substr(2) : key; }

// The text of a flag's value in a sweep file: strings as they are, numbers as JSON writes them.
std::string value_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.is_number_float() ? v.dump() : setting_text(v);
  fail("%s: expected a string, number or boolean", where.c_str());
}

std::vector<std::string> args_of(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return split_args(v.get<std::string>());
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& a : v) out.push_back(value_text(a, where));
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      out.push_back("--" + strip_dashes(it.key()) + "=" + value_text(*it, where));
  } else {
    fail("%s: expected flags as a string, a list or an object", where.c_str());
  }
  return out;
}

// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string json_error_text(const nlohmann::json::exception& e) {
  const std::string w = e.what();
  const size_t close = w.find("] ");
  return close == std::string::npos ? w : w.substr(close + 2);
}

void parse_variants(const nlohmann::json& v, const SweepFileLocator& at, SweepSpec& s) {
  const std::string where = at({"variants"}) + ": variants";
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      s.variants.push_back({it.key(), args_of(*it, at({"variants", it.key()}) + ": variants." + it.key())});
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const nlohmann::json& x = v[i];
      const std::string item = at({"variants", std::to_string(i)}) + ": variants";
      if (!x.is_object() || !x.contains("name") || !x["name"].is_string())
        fail("%s: each variant needs a \"name\" and \"args\"", item.c_str());
      s.variants.push_back(
          {x["name"].get<std::string>(), x.contains("args") ? args_of(x["args"], item) : std::vector<std::string>{}});
    }
  } else {
    fail("%s: expected a list of {name, args} or an object of name: args", where.c_str());
  }
  for (size_t i = 0; i < s.variants.size(); ++i)
    if (!plain_name(s.variants[i].name))
      fail("%s: variant name \"%s\": letters, digits, '-', '_' or '.' only",
           at({"variants", v.is_array() ? std::to_string(i) : s.variants[i].name}).c_str(),
           s.variants[i].name.c_str());
}

}  // namespace

std::vector<std::string> split_args(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c, in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(cur), cur.clear(), in_word = false;
    } else {
      cur += c, in_word = true;
    }
  }
  if (quote) fail("%s: an unterminated quote", text.c_str());
  if (in_word) out.push_back(cur);
  return out;
}

std::vector<GridAxis> parse_grid(const std::string& text) {
  std::vector<GridAxis> axes;
  for (const std::string& item : split_args(text)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      fail("--grid %s: expected FLAG=V1,V2,... (e.g. depth=3,4)", item.c_str());
    GridAxis a{strip_dashes(item.substr(0, eq)), split_commas(item.substr(eq + 1))};
    for (const std::string& v : a.values)
      if (v.empty()) fail("--grid %s: an empty value", item.c_str());
    for (const GridAxis& b : axes)
      if (b.key == a.key) fail("--grid %s: %s is given twice", item.c_str(), a.key.c_str());
    axes.push_back(std::move(a));
  }
  return axes;
}

Variant parse_variant(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  if (!plain_name(name))
    fail("--variant %s: expected NAME:'--flag value ...' with a name of letters, digits, '-', '_' or '.'",
         text.c_str());
  return {name, colon == std::string::npos ? std::vector<std::string>{} : split_args(text.substr(colon + 1))};
}

SweepSpec parse_sweep_file(const nlohmann::json& j, const std::string& path, const SweepFileLocator& locate) {
  const auto at = [&](const std::vector<std::string>& keys) { return locate ? locate(keys) : path; };
  if (!j.is_object()) fail("%s: expected an object with grid, variants, seeds and flags", at({}).c_str());
  SweepSpec s;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "grid" && it.key() != "variants" && it.key() != "seeds" && it.key() != "flags")
      fail("%s: unknown key \"%s\" (expected grid, variants, seeds or flags)", at({it.key()}).c_str(),
           it.key().c_str());
  if (j.contains("grid")) {
    if (!j["grid"].is_object()) fail("%s: \"grid\" must be an object of flag: [values]", at({"grid"}).c_str());
    for (auto it = j["grid"].begin(); it != j["grid"].end(); ++it) {
      const std::string where = at({"grid", it.key()}) + ": grid." + it.key();
      GridAxis a{strip_dashes(it.key()), {}};
      if (!it->is_array() || it->empty()) fail("%s: expected a non-empty list of values", where.c_str());
      for (const auto& v : *it) a.values.push_back(value_text(v, where));
      s.grid.push_back(std::move(a));
    }
  }
  if (j.contains("variants")) parse_variants(j["variants"], at, s);
  if (j.contains("seeds")) {
    if (!j["seeds"].is_number_integer() || j["seeds"].get<int64_t>() < 1 || j["seeds"].get<int64_t>() > 1000)
      fail("%s: \"seeds\" must be a whole number from 1 to 1000", at({"seeds"}).c_str());
    s.seeds = j["seeds"].get<int>();
  }
  if (j.contains("flags")) s.shared_args = args_of(j["flags"], at({"flags"}) + ": flags");
  return s;
}

SweepSpec read_sweep_file(const std::string& path) {
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".toml") == 0) {
    const TomlSweepFile t = read_toml_sweep_file(path);
    return parse_sweep_file(t.json, path, t.at);
  }
  nlohmann::json j;
  try {
    j = read_json_file(path);
  } catch (const nlohmann::json::exception& e) {
    fail("%s: not valid JSON (%s)", path.c_str(), json_error_text(e).c_str());
  }
  return parse_sweep_file(j, path);
}

void merge_specs(SweepSpec& spec, const SweepSpec& more) {
  for (const GridAxis& a : more.grid) {
    for (const GridAxis& b : spec.grid)
      if (a.key == b.key) fail("--grid %s: also in the sweep file's grid", a.key.c_str());
    spec.grid.push_back(a);
  }
  for (const Variant& v : more.variants) {
    for (const Variant& w : spec.variants)
      if (v.name == w.name) fail("--variant %s: a variant of that name is already given", v.name.c_str());
    spec.variants.push_back(v);
  }
  if (more.seeds > 0) spec.seeds = more.seeds;
  for (const std::string& a : more.shared_args) spec.shared_args.push_back(a);
}

std::vector<std::string> flags_in(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args)
    if (a.rfind("--", 0) == 0 && a.size() > 2)
      out.push_back(a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2));
  return out;
}

std::vector<PlannedRun> expand_sweep(const SweepSpec& spec, uint64_t base_seed) {
  const int seeds = std::max(1, spec.seeds);
  for (const GridAxis& a : spec.grid)
    if (a.key == "seed" && spec.seeds > 0) fail("--grid seed: cannot be combined with --seeds");
  for (const Variant& v : spec.variants)
    for (const std::string& f : flags_in(v.args)) {
      for (const GridAxis& a : spec.grid)
        if (a.key == f) fail("--variant %s: sets --%s, which --grid varies", v.name.c_str(), f.c_str());
      if (f == "seed" && spec.seeds > 0) fail("--variant %s: sets --seed, which --seeds sets", v.name.c_str());
    }
  std::vector<Variant> variants = spec.variants;
  if (variants.empty()) variants.push_back({"", {}});
  size_t combos = 1;
  for (const GridAxis& a : spec.grid) combos *= a.values.size();
  std::vector<PlannedRun> runs;
  std::set<std::string> names;
  for (int s = 0; s < seeds; ++s)
    for (const Variant& v : variants)
      for (size_t c = 0; c < combos; ++c) {
        PlannedRun r;
        r.variant = v.name;
        r.args = v.args;
        std::string name = strf("%03zu", runs.size() + 1) + (v.name.empty() ? "" : "_" + v.name);
        size_t rest = c, stride = combos;
        for (const GridAxis& a : spec.grid) {
          stride /= a.values.size();
          const std::string& value = a.values[rest / stride];
          rest %= stride;
          r.grid.push_back({a.key, value});
          r.args.push_back("--" + a.key + "=" + value);
          name += "_" + a.key + "=" + name_part(value);
        }
        if (spec.seeds > 0) {
          r.own_seed = true, r.seed = base_seed + uint64_t(s);
          r.args.push_back("--seed=" + std::to_string(r.seed));
          name += "_seed=" + std::to_string(r.seed);
        }
        r.name = name;
        if (!names.insert(name).second) fail("the sweep names two runs %s", name.c_str());
        runs.push_back(std::move(r));
      }
  return runs;
}

}  // namespace nt::experiment
