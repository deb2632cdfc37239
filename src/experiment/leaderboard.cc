// SPDX-License-Identifier: MIT
#include "experiment/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/check.h"
#include "experiment/settings.h"

namespace nt::experiment {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) out.push_back(s.substr(start, i - start)), start = i + 1;
  return out;
}

std::string value_of(const RunRecord& r, const std::string& key) {
  if (key == "state") return run_state_name(r.state);
  if (key == "name") return r.name;
  const auto it = r.settings.find(key);
  return it == r.settings.end() ? "-" : it->second;
}

// Lower is better for val_bpb; higher for CORE and throughput; unknown values last.
double sort_value(const LeaderRow& row, SortKey k) {
  switch (k) {
    case SortKey::kValBpb: return row.val_bpb.mean;
    case SortKey::kCore: return -row.core.mean;
    case SortKey::kTokensPerSecond: return -row.tokens_per_second.mean;
    case SortKey::kName: return 0;
  }
  return 0;
}

std::string states_text(const std::vector<RunRecord>& runs, const std::vector<size_t>& idx) {
  std::map<std::string, int> count;
  for (size_t i : idx) ++count[run_state_name(runs[i].state)];
  if (count.size() == 1 && idx.size() == 1) return count.begin()->first;
  std::string out;
  for (const auto& [s, n] : count) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  return out;
}

LeaderRow make_row(const std::vector<RunRecord>& runs, std::vector<size_t> idx, std::string label) {
  LeaderRow row;
  row.label = std::move(label);
  row.runs = std::move(idx);
  std::vector<double> bpb, core, tps, mfu, tokens;
  for (size_t i : row.runs) {
    const RunRecord& r = runs[i];
    bpb.push_back(r.val_bpb), core.push_back(r.core), tokens.push_back(double(r.tokens));
    tps.push_back(r.tokens_per_second > 0 ? r.tokens_per_second : NAN), mfu.push_back(r.mfu > 0 ? r.mfu : NAN);
    row.params = std::max(row.params, r.params);
  }
  row.val_bpb = stat_of(bpb), row.core = stat_of(core), row.tokens_per_second = stat_of(tps);
  row.mfu = stat_of(mfu), row.tokens = stat_of(tokens);
  row.state = states_text(runs, row.runs);
  return row;
}

}  // namespace

Where parse_where(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    fail("--where %s: expected KEY=VALUE (or KEY=V1,V2), e.g. depth=4", text.c_str());
  Where w{text.substr(0, eq), split(text.substr(eq + 1), ',')};
  if (w.key.rfind("--", 0) == 0) w.key = w.key.substr(2);
  return w;
}

bool matches(const RunRecord& r, const std::vector<Where>& where) {
  for (const Where& w : where) {
    const std::string v = value_of(r, w.key);
    if (std::find(w.values.begin(), w.values.end(), v) == w.values.end()) return false;
  }
  return true;
}

Stat stat_of(const std::vector<double>& xs) {
  Stat s;
  double sum = 0;
  for (double x : xs) {
    if (!std::isfinite(x)) continue;
    sum += x, ++s.n;
    s.min = s.n == 1 ? x : std::min(s.min, x);
    s.max = s.n == 1 ? x : std::max(s.max, x);
  }
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  double ss = 0;
  for (double x : xs)
    if (std::isfinite(x)) ss += (x - s.mean) * (x - s.mean);
  s.spread = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  return s;
}

SortKey parse_sort_key(const std::string& s) {
  if (s == "val_bpb") return SortKey::kValBpb;
  if (s == "core") return SortKey::kCore;
  if (s == "tokens_per_second") return SortKey::kTokensPerSecond;
  if (s == "name") return SortKey::kName;
  fail("--sort %s: expected val_bpb, core, tokens_per_second or name", s.c_str());
}

const char* sort_key_name(SortKey k) {
  switch (k) {
    case SortKey::kValBpb: return "val_bpb";
    case SortKey::kCore: return "core";
    case SortKey::kTokensPerSecond: return "tokens_per_second";
    case SortKey::kName: return "name";
  }
  return "val_bpb";
}

std::string group_label(const RunRecord& r, const std::vector<std::string>& differing) {
  std::vector<std::string> keys;
  for (const std::string& k : differing)
    if (k != "seed") keys.push_back(k);
  return settings_label(r.settings, keys);
}

Leaderboard make_leaderboard(std::vector<RunRecord> runs, const LeaderOptions& opt) {
  Leaderboard lb;
  lb.sort = opt.sort;
  for (RunRecord& r : runs)
    if (matches(r, opt.where)) lb.runs.push_back(std::move(r));
  std::vector<const Settings*> settings;
  for (const RunRecord& r : lb.runs) settings.push_back(&r.settings);
  lb.differing = differing_keys(settings);
  // Runs in sorted order first, so that each group lists its runs best first.
  std::vector<LeaderRow> single;
  for (size_t i = 0; i < lb.runs.size(); ++i) single.push_back(make_row(lb.runs, {i}, ""));
  std::vector<size_t> order(lb.runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto better = [&](const LeaderRow& a, const LeaderRow& b, const std::string& an, const std::string& bn) {
    const double x = sort_value(a, opt.sort), y = sort_value(b, opt.sort);
    if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
    if (!std::isnan(x) && x != y) return x < y;
    return an < bn;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return better(single[a], single[b], lb.runs[a].name, lb.runs[b].name); });
  std::vector<RunRecord> sorted;
  for (size_t i : order) sorted.push_back(std::move(lb.runs[i]));
  lb.runs = std::move(sorted);

  std::map<std::string, std::vector<size_t>> groups;
  std::vector<std::string> first_seen;
  for (size_t i = 0; i < lb.runs.size(); ++i) {
    const std::string key = opt.group_seeds ? group_label(lb.runs[i], lb.differing) : lb.runs[i].name;
    if (!groups.count(key)) first_seen.push_back(key);
    groups[key].push_back(i);
  }
  for (const std::string& key : first_seen)
    lb.rows.push_back(make_row(lb.runs, groups[key], group_label(lb.runs[groups[key].front()], lb.differing)));
  std::stable_sort(lb.rows.begin(), lb.rows.end(), [&](const LeaderRow& a, const LeaderRow& b) {
    return better(a, b, lb.runs[a.runs.front()].name, lb.runs[b.runs.front()].name);
  });
  return lb;
}

}  // namespace nt::experiment
