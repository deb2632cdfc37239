// SPDX-License-Identifier: MIT
#include "experiment/leaderboard_format.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace nt::experiment {

namespace {

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json stat_json(const Stat& s) {
  return {{"mean", number_or_null(s.mean)},
          {"spread", number_or_null(s.spread)},
          {"min", number_or_null(s.min)},
          {"max", number_or_null(s.max)},
          {"n", s.n}};
}

nlohmann::json run_json(const RunRecord& r, const std::vector<std::string>& differing) {
  nlohmann::json differs = nlohmann::json::object();
  for (const std::string& k : differing) {
    const auto it = r.settings.find(k);
    differs[k] = it == r.settings.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second);
  }
  nlohmann::json j = {{"name", r.name},
                      {"dir", r.dir},
                      {"state", run_state_name(r.state)},
                      {"val_bpb", number_or_null(r.val_bpb)},
                      {"core", number_or_null(r.core)},
                      {"final_loss", number_or_null(r.final_loss)},
                      {"tokens", r.tokens},
                      {"tokens_per_second", r.tokens_per_second},
                      {"mfu", r.mfu},
                      {"params", r.params},
                      {"steps", r.steps},
                      {"train_seconds", r.train_seconds},
                      {"differs", differs},
                      {"settings", r.settings}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

// The seeds of a row's runs: listed up to four, else counted.
std::string seed_list(const Leaderboard& lb, const LeaderRow& row) {
  if (row.runs.size() > 4) return strf("%zu runs", row.runs.size());
  std::string out;
  for (size_t i : row.runs) {
    const auto it = lb.runs[i].settings.find("seed");
    out += (out.empty() ? "" : ",") + (it == lb.runs[i].settings.end() ? std::string("-") : it->second);
  }
  return out;
}

}  // namespace

std::string si_count(double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  if (a >= 1e9) return strf("%.3gG", v / 1e9);
  if (a >= 1e6) return strf("%.3gM", v / 1e6);
  if (a >= 1e3) return strf("%.3gk", v / 1e3);
  return strf("%.3g", v);
}

std::string stat_text(const Stat& s, const char* fmt) {
  if (s.n == 0) return "-";
  std::string out = strf(fmt, s.mean);
  if (s.n > 1) out += " ± " + strf(fmt, s.spread);
  return out;
}

std::vector<std::vector<std::string>> leaderboard_cells(const Leaderboard& lb) {
  std::vector<std::string> head = {"#", "run", "state", "val_bpb", "core"};
  std::vector<std::string> keys;
  for (const std::string& k : lb.differing)
    if (k != "seed") keys.push_back(k);
  for (const std::string& k : keys) head.push_back(k);
  for (const char* h : {"seeds", "tokens", "tokens/s", "MFU", "params"}) head.push_back(h);
  std::vector<std::vector<std::string>> cells{head};
  for (size_t i = 0; i < lb.rows.size(); ++i) {
    const LeaderRow& row = lb.rows[i];
    const RunRecord& first = lb.runs[row.runs.front()];
    std::string name = first.name;
    if (row.runs.size() > 1) name += strf(" (+%zu)", row.runs.size() - 1);
    std::vector<std::string> c = {std::to_string(i + 1), name, row.state, stat_text(row.val_bpb, "%.4f"),
                                  stat_text(row.core, "%.4f")};
    for (const std::string& k : keys) {
      const auto it = first.settings.find(k);
      c.push_back(it == first.settings.end() ? "-" : it->second);
    }
    Stat mfu = row.mfu;
    mfu.mean *= 100, mfu.spread *= 100;
    c.push_back(seed_list(lb, row));
    c.push_back(si_count(row.tokens.mean));
    c.push_back(row.tokens_per_second.n ? si_count(row.tokens_per_second.mean) : "-");
    c.push_back(mfu.n ? strf("%.1f%%", mfu.mean) : "-");
    c.push_back(row.params > 0 ? si_count(double(row.params)) : "-");
    cells.push_back(c);
  }
  return cells;
}

std::string leaderboard_text(const Leaderboard& lb) {
  if (lb.runs.empty()) return "no runs\n";
  const auto cells = leaderboard_cells(lb);
  std::vector<size_t> width(cells[0].size(), 0);
  // Display width: "±" is two bytes and one column.
  const auto cols = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
    return n;
  };
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], cols(row[c]));
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c] + std::string(width[c] - cols(row[c]) + (c + 1 < row.size() ? 2 : 0), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string leaderboard_markdown(const Leaderboard& lb) {
  const auto cells = leaderboard_cells(lb);
  std::string out;
  for (size_t r = 0; r < cells.size(); ++r) {
    out += "|";
    for (const std::string& c : cells[r]) {
      std::string cell = c;
      for (size_t p = 0; (p = cell.find('|', p)) != std::string::npos; p += 2) cell.replace(p, 1, "\\|");
      out += " " + cell + " |";
    }
    out += "\n";
    if (r == 0) {
      out += "|";
      for (size_t c = 0; c < cells[0].size(); ++c) out += " --- |";
      out += "\n";
    }
  }
  return out;
}

nlohmann::json leaderboard_json(const Leaderboard& lb) {
  nlohmann::json runs = nlohmann::json::array(), groups = nlohmann::json::array();
  for (const RunRecord& r : lb.runs) runs.push_back(run_json(r, lb.differing));
  for (const LeaderRow& row : lb.rows) {
    nlohmann::json names = nlohmann::json::array();
    for (size_t i : row.runs) names.push_back(lb.runs[i].name);
    groups.push_back({{"label", row.label},
                      {"runs", names},
                      {"state", row.state},
                      {"val_bpb", stat_json(row.val_bpb)},
                      {"core", stat_json(row.core)},
                      {"tokens", stat_json(row.tokens)},
                      {"tokens_per_second", stat_json(row.tokens_per_second)},
                      {"mfu", stat_json(row.mfu)},
                      {"params", row.params}});
  }
  return {{"schema", "nanotrain-runs/1"},
          {"sort", sort_key_name(lb.sort)},
          {"differing", lb.differing},
          {"runs", runs},
          {"groups", groups}};
}

}  // namespace nt::experiment
