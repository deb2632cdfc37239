// SPDX-License-Identifier: MIT
#include "experiment/chart_frame.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "experiment/charts.h"
#include "experiment/leaderboard_format.h"

namespace nt::experiment {

namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Ticks at 1, 2 and 5 times each power of ten in [lo, hi], thinned to every 2nd / 5th / decade
// until their labels fit.
std::vector<double> log_ticks(double lo, double hi, double span_px, const std::function<std::string(double)>& label,
                              bool vertical) {
  const double d0 = profile::decade_below(lo), d1 = profile::decade_above(hi);
  for (const std::vector<double>& mult : {std::vector<double>{1, 2, 5}, {1, 3}, {1}}) {
    std::vector<double> t;
    for (double d = d0; d <= d1 * 1.0001; d *= 10)
      for (double m : mult)
        if (d * m >= d0 * 0.9999 && d * m <= d1 * 1.0001) t.push_back(d * m);
    double need = 0;
    for (double v : t) need += vertical ? 16 : label_px(label(v)) + 10;
    if (need <= span_px || mult.size() == 1) return t;
  }
  return {};
}

}  // namespace

const char* series_colour(size_t i) { return kPalette[i % 10]; }
bool series_dashed(size_t i) { return (i / 10) % 2 == 1; }

std::string tick_number(double v) {
  if (std::fabs(v) >= 1e4) return si_count(v);
  return strf("%g", v);
}

double ChartAxis::operator()(double v) const {
  if (log) return profile::LogAxis{lo, hi, p_lo, p_hi}(v);
  return profile::LinearAxis{lo, hi, p_lo, p_hi}(v);
}

ChartAxis make_axis(double lo, double hi, double p_lo, double p_hi, bool log,
                    const std::function<std::string(double)>& label, bool vertical) {
  ChartAxis a;
  a.p_lo = p_lo, a.p_hi = p_hi, a.log = log;
  const double span = std::fabs(p_hi - p_lo);
  if (log) {
    a.ticks = log_ticks(lo, hi, span, label, vertical);
    a.lo = a.ticks.front(), a.hi = a.ticks.back();
    if (a.hi <= a.lo) a.hi = a.lo * 10, a.ticks.push_back(a.hi);
    return a;
  }
  for (int target = 8; target >= 2; --target) {
    a.ticks = profile::nice_ticks(lo, hi, target);
    double widest = 0;
    for (double v : a.ticks) widest = std::max(widest, vertical ? 16.0 : label_px(label(v)) + 10);
    if (widest * double(a.ticks.size()) <= span) break;
  }
  a.lo = a.ticks.front(), a.hi = a.ticks.back();
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  return a;
}

profile::Svg chart_page(const std::string& title, const std::string& subtitle, size_t legend_lines) {
  const double legend_bottom = kChartTop + 24 + kLegendRow * double(legend_lines);
  profile::Svg svg(kChartWidth, std::max(kChartBottom + 60, legend_bottom + 20));
  svg.text(kChartLeft, 26, title, 16, "start", "#222222", true);
  svg.text(kChartLeft, 46, subtitle, 12, "start", "#555555");
  svg.text(kLegendX, kChartTop + 8, "series (repeats: band or bar, low to high)", 11, "start", "#555555", true);
  return svg;
}

void draw_axes(profile::Svg& svg, const ChartAxis& x, const ChartAxis& y, const std::string& x_label,
               const std::string& y_label, const std::function<std::string(double)>& x_text,
               const std::function<std::string(double)>& y_text) {
  for (double v : x.ticks) {
    svg.line(x(v), kChartTop, x(v), kChartBottom, "#e4e4e4");
    svg.text(x(v), kChartBottom + 16, x_text(v), 11, "middle");
  }
  for (double v : y.ticks) {
    svg.line(kChartLeft, y(v), kChartRight, y(v), "#e4e4e4");
    svg.text(kChartLeft - 6, y(v) + 4, y_text(v), 11, "end");
  }
  svg.line(kChartLeft, kChartBottom, kChartRight, kChartBottom, "#000000");
  svg.line(kChartLeft, kChartTop, kChartLeft, kChartBottom, "#000000");
  svg.text((kChartLeft + kChartRight) / 2, kChartBottom + 40, x_label, 12, "middle");
  svg.text(kChartLeft - 62, (kChartTop + kChartBottom) / 2, y_label, 12, "middle", "#222222", false, -90);
}

std::vector<std::string> legend_lines(const std::string& label) {
  constexpr size_t kWidth = 46, kLines = 3;  // characters that fit beside the swatch; lines at most
  std::vector<std::string> lines{""};
  size_t start = 0;
  while (start < label.size()) {
    size_t end = label.find(' ', start);
    if (end == std::string::npos) end = label.size();
    const std::string word = label.substr(start, end - start);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > kWidth) lines.push_back("");
    lines.back() += (lines.back().empty() ? "" : " ") + word;
    start = end + 1;
  }
  for (std::string& l : lines)
    if (l.size() > kWidth) l = l.substr(0, kWidth - 2) + "…";
  if (lines.size() > kLines) {
    lines.resize(kLines);
    lines.back() = lines.back().substr(0, std::min(lines.back().size(), kWidth - 2)) + " …";
  }
  return lines;
}

size_t legend_line_count(const std::vector<std::string>& labels) {
  size_t n = 0;
  for (const std::string& l : labels) n += legend_lines(l).size();
  return n;
}

void draw_legend(profile::Svg& svg, const std::vector<std::string>& labels, const std::vector<bool>& bands) {
  size_t line = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::vector<std::string> lines = legend_lines(labels[i]);
    const double y = kChartTop + 24 + kLegendRow * double(line);
    const char* colour = series_colour(i);
    svg.rect(kLegendX, y - 11, kChartWidth - kLegendX - 8, kLegendRow * double(lines.size()) - 2, "#ffffff", labels[i]);
    if (bands[i])
      svg.polygon({{kLegendX, y - 9}, {kLegendX + 26, y - 9}, {kLegendX + 26, y + 3}, {kLegendX, y + 3}}, colour, 0.25);
    svg.polyline({{kLegendX, y - 3}, {kLegendX + 26, y - 3}}, colour, 2.5, 1.0, series_dashed(i) ? "5 3" : "");
    for (size_t k = 0; k < lines.size(); ++k) svg.text(kLegendX + 34, y + 1 + kLegendRow * double(k), lines[k], 11);
    line += lines.size();
  }
}

}  // namespace nt::experiment
