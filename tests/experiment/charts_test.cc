// SPDX-License-Identifier: MIT
// The comparison charts: a band where a series has repeats, legends beside the plot, tick labels
// that do not collide, a log axis for wide ranges, and a report with nothing fetched.
#include "experiment/charts.h"

#include <gtest/gtest.h>

#include <regex>

#include "experiment/chart_frame.h"
#include "experiment/plots.h"

namespace nt::experiment {
namespace {

std::vector<CurvePoint> curve(double scale, int n) {
  std::vector<CurvePoint> c;
  for (int i = 1; i <= n; ++i) c.push_back({double(i), 1000.0 * i, scale * 5.0 / std::sqrt(double(i))});
  return c;
}

// The x positions and text of the tick labels under the plot.
std::vector<std::pair<double, std::string>> x_labels(const std::string& svg) {
  std::vector<std::pair<double, std::string>> out;
  const std::regex text("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator(); ++it)
    if (std::abs(std::stod((*it)[2]) - (kChartBottom + 16)) < 0.01) out.push_back({std::stod((*it)[1]), (*it)[3]});
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = s.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

TEST(Charts, CurvesWithBandsAndALegend) {
  const std::string long_label(80, 'x');
  const std::vector<CurveSeries> series = {{"seeds", {curve(1.0, 200), curve(1.1, 180)}},
                                           {long_label, {curve(0.9, 150)}}};
  const std::string svg = curve_chart_svg({"title", "sub", "loss"}, series, CurveX::kTokens, true);
  EXPECT_EQ(count(svg, "<polygon"), 2u);  // the band, and its legend swatch
  EXPECT_NE(svg.find("tokens trained"), std::string::npos);
  EXPECT_NE(svg.find(">seeds</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">" + long_label + "</text>"), std::string::npos);         // shortened on the page
  EXPECT_NE(svg.find("<title>" + long_label + "</title>"), std::string::npos);  // whole as a tooltip
  const auto labels = x_labels(svg);
  ASSERT_GE(labels.size(), 3u);
  for (size_t i = 1; i < labels.size(); ++i) {
    const double gap = labels[i].first - labels[i - 1].first;
    EXPECT_GT(gap, label_px(labels[i].second) / 2 + label_px(labels[i - 1].second) / 2) << labels[i].second;
  }
  EXPECT_NE(svg.find("200k"), std::string::npos);  // counts with a unit suffix, not 200000
}

TEST(Charts, OnePointPerRunGetsAnErrorBar) {
  const std::vector<CurveSeries> series = {{"a", {{{10, 1e4, 1.5}}, {{11, 1.1e4, 1.6}}}}};
  const std::string svg = curve_chart_svg({"t", "s", "val_bpb"}, series, CurveX::kSeconds, false);
  EXPECT_EQ(count(svg, "class=\"point\""), 1u);
  EXPECT_NE(svg.find("training time (s)"), std::string::npos);
  EXPECT_NE(curve_chart_svg({"t", "s", "y"}, {}, CurveX::kSeconds, false).find("no points recorded"),
            std::string::npos);
}

TEST(Charts, ScatterUsesALogAxisForWideRanges) {
  const std::vector<ScatterSeries> wide = {{"a", {{1e5, 1.5}, {1.1e5, 1.6}}, {"r1", "r2"}},
                                           {"b", {{5e7, 1.2}}, {"r3"}}};
  const std::string svg = scatter_chart_svg({"t", "s", "val_bpb"}, "parameters", wide);
  EXPECT_NE(svg.find("parameters (log scale)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"point\""), 3u);
  EXPECT_NE(svg.find("r3: 50M, 1.2000"), std::string::npos);
  const std::vector<ScatterSeries> narrow = {{"a", {{1000, 1.5}, {1500, 1.4}}, {"r1", "r2"}}};
  EXPECT_EQ(scatter_chart_svg({"t", "s", "y"}, "tokens/s", narrow).find("log scale"), std::string::npos);
}

TEST(Charts, ReportIsSelfContained) {
  Leaderboard lb;
  RunRecord r;
  r.name = "run <1>", r.dir = "d", r.state = RunState::kDone, r.val_bpb = 1.25, r.settings = {{"depth", "3"}};
  r.loss = curve(1, 30);
  lb.runs = {r, r};
  lb.runs[1].name = "run 2", lb.runs[1].settings["depth"] = "4";
  lb.differing = {"depth"};
  lb.rows = {{"depth=3", {0}, stat_of({1.25}), {}, {}, {}, {}, 100, "done"},
             {"depth=4", {1}, stat_of({1.25}), {}, {}, {}, {}, 100, "done"}};
  const auto charts = comparison_charts(lb);
  EXPECT_EQ(charts.size(), 6u);
  const std::string html = report_html(lb, charts);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 6u);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  EXPECT_NE(html.find("run &lt;1&gt;"), std::string::npos);
  EXPECT_NE(html.find("<th>best run</th>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>depth</td><td>4</td><td class=\"muted\">3</td></tr>"), std::string::npos);
}

}  // namespace
}  // namespace nt::experiment
