// SPDX-License-Identifier: MIT
// report.html (plots.h): one page with no outside resources, readable offline and printable.
#include <cmath>

#include "core/check.h"
#include "experiment/charts.h"
#include "experiment/leaderboard_format.h"
#include "experiment/plots.h"
#include "profile/svg.h"

namespace nt::experiment {

namespace {

using profile::xml_escape;

constexpr const char* kStyle = R"(body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
.swatch{display:inline-block;width:14px;height:10px;margin-right:6px;vertical-align:middle}
figure{margin:12px 0}svg{max-width:100%;height:auto}details{margin:4px 0 12px}code{font-size:12px}
.state-failed,.state-broken{color:#b00}.muted{color:#666})";

std::string leaderboard_table(const Leaderboard& lb) {
  const auto cells = leaderboard_cells(lb);
  std::string h = "<table>\n<tr>";
  for (const std::string& c : cells[0]) h += "<th>" + xml_escape(c) + "</th>";
  h += "</tr>\n";
  for (size_t r = 1; r < cells.size(); ++r) {
    h += "<tr>";
    for (size_t c = 0; c < cells[r].size(); ++c) {
      std::string cell = xml_escape(cells[r][c]);
      if (c == 1) cell = strf("<span class=\"swatch\" style=\"background:%s\"></span>", series_colour(r - 1)) + cell;
      const bool num = c == 0 || c == 3 || c == 4 || c + 5 >= cells[r].size();
      h += (num ? "<td class=\"num\">" : "<td>") + cell + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

std::string joined(const std::vector<std::string>& keys) {
  if (keys.empty()) return "none";
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// A run's settings against the best run's (the leaderboard's first): what it changed.
std::string run_section(const RunRecord& r, const Leaderboard& lb) {
  std::string h = "<h3>" + xml_escape(r.name) + "</h3>\n<p><span class=\"state-" + run_state_name(r.state) + "\">" +
                  run_state_name(r.state) + "</span>";
  if (std::isfinite(r.val_bpb)) h += strf(" · val_bpb %.4f", r.val_bpb);
  if (std::isfinite(r.core)) h += strf(" · CORE %.4f", r.core);
  h += strf(" · %s tokens · %s params", si_count(double(r.tokens)).c_str(), si_count(double(r.params)).c_str());
  h += " · <code>" + xml_escape(r.dir) + "</code>";
  if (!r.error.empty()) h += "<br><span class=\"state-broken\">" + xml_escape(r.error) + "</span>";
  h += "</p>\n";
  const RunRecord& best = lb.runs.front();
  const auto value = [](const RunRecord& x, const std::string& k) {
    const auto it = x.settings.find(k);
    return it == x.settings.end() ? std::string("-") : it->second;
  };
  std::string diff;
  for (const std::string& k : lb.differing) {
    if (&r != &best && value(r, k) == value(best, k)) continue;
    diff += "<tr><td>" + xml_escape(k) + "</td><td>" + xml_escape(value(r, k)) + "</td>" +
            (&r == &best ? "" : "<td class=\"muted\">" + xml_escape(value(best, k)) + "</td>") + "</tr>\n";
  }
  if (&r == &best && !diff.empty()) {
    h += "<p class=\"muted\">The best run: the others are compared with it.</p>\n";
    h += "<table><tr><th>setting</th><th>this run</th></tr>\n" + diff + "</table>\n";
  } else if (diff.empty()) {
    h += "<p class=\"muted\">The same settings as the best run.</p>\n";
  } else {
    h += "<table><tr><th>setting</th><th>this run</th><th>best run</th></tr>\n" + diff + "</table>\n";
  }
  h += "<details><summary>all settings</summary><table>\n";
  for (const auto& [k, v] : r.settings) h += "<tr><td>" + xml_escape(k) + "</td><td>" + xml_escape(v) + "</td></tr>\n";
  return h + "</table></details>\n";
}

}  // namespace

std::string report_html(const Leaderboard& lb, const std::vector<std::pair<std::string, std::string>>& charts) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>nanotrain: " +
                  strf("%zu runs", lb.runs.size()) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  h += strf("<h1>nanotrain: %zu runs</h1>\n", lb.runs.size());
  h += "<p class=\"muted\">Sorted by " + std::string(sort_key_name(lb.sort)) +
       "; runs that differ only by seed share a row (mean ± sample standard deviation). Settings that differ: " +
       xml_escape(joined(lb.differing)) + ".</p>\n";
  h += "<h2>Leaderboard</h2>\n" + (lb.runs.empty() ? std::string("<p>No runs.</p>\n") : leaderboard_table(lb));
  h += "<h2>Charts</h2>\n";
  for (const auto& [name, svg] : charts) {
    const size_t start = svg.find("<svg");
    h += "<figure id=\"" + xml_escape(name) + "\">\n" + (start == std::string::npos ? svg : svg.substr(start)) +
         "</figure>\n";
  }
  h += "<h2>Runs</h2>\n";
  for (const RunRecord& r : lb.runs) h += run_section(r, lb);
  return h + "</body>\n</html>\n";
}

}  // namespace nt::experiment
