// SPDX-License-Identifier: MIT
// Curves of many runs against training time or tokens (charts.h).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "experiment/chart_frame.h"
#include "experiment/charts.h"

namespace nt::experiment {

namespace {

using Line = std::vector<std::pair<double, double>>;
constexpr size_t kMaxPoints = 400;  // a drawn line's points at most (a long run has thousands of steps)

// A run's (x, value) points in x order: with smooth, a bias-corrected moving average over about a
// tenth of the points (30 at most); thinned to kMaxPoints.
Line prepared(const std::vector<CurvePoint>& c, CurveX x, bool smooth) {
  Line all;
  const double beta = !smooth || c.size() < 20 ? 0.0 : 1.0 - 1.0 / std::min(30.0, double(c.size()) / 10.0);
  double ema = 0, weight = 0;
  for (const CurvePoint& p : c) {
    ema = beta * ema + (1 - beta) * p.value, weight = beta * weight + (1 - beta);
    all.push_back({x == CurveX::kSeconds ? p.seconds : p.tokens, ema / weight});
  }
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (all.size() <= kMaxPoints) return all;
  Line thin;
  const size_t stride = (all.size() + kMaxPoints - 1) / kMaxPoints;
  for (size_t i = 0; i < all.size(); ++i)
    if (i % stride == 0 || i + 1 == all.size()) thin.push_back(all[i]);
  return thin;
}

double value_at(const Line& c, double x) {
  const auto it = std::lower_bound(c.begin(), c.end(), x, [](const auto& p, double v) { return p.first < v; });
  if (it == c.begin()) return c.front().second;
  if (it == c.end()) return c.back().second;
  const auto& [x1, y1] = *it;
  const auto& [x0, y0] = *(it - 1);
  return x1 > x0 ? y0 + (y1 - y0) * (x - x0) / (x1 - x0) : y1;
}

// A series drawn: the mean line, and the band between its runs' lowest and highest values.
struct Drawn {
  Line mean, lo, hi;
};

Drawn combine(const std::vector<Line>& runs) {
  Drawn d;
  if (runs.size() == 1) {
    d.mean = runs[0];
    return d;
  }
  double x0 = -INFINITY, x1 = INFINITY;
  for (const Line& r : runs) x0 = std::max(x0, r.front().first), x1 = std::min(x1, r.back().first);
  const size_t n = x1 > x0 ? 120 : 1;
  for (size_t i = 0; i < n; ++i) {
    // Runs that overlap: sampled across the shared range; runs that do not (a point each): their means.
    double x = n > 1 ? x0 + (x1 - x0) * double(i) / double(n - 1) : 0.0, sum = 0, lo = INFINITY, hi = -INFINITY;
    if (n == 1)
      for (const Line& r : runs) x += r.back().first / double(runs.size());
    for (const Line& r : runs) {
      const double v = n > 1 ? value_at(r, x) : r.back().second;
      sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
    }
    d.mean.push_back({x, sum / double(runs.size())});
    d.lo.push_back({x, lo}), d.hi.push_back({x, hi});
  }
  return d;
}

void draw_series(profile::Svg& svg, const Drawn& d, size_t i, const ChartAxis& ax, const ChartAxis& ay) {
  const char* colour = series_colour(i);
  Line px;
  if (d.lo.size() > 1) {
    Line band;
    for (const auto& [x, y] : d.lo) band.push_back({ax(x), ay(y)});
    for (auto it = d.hi.rbegin(); it != d.hi.rend(); ++it) band.push_back({ax(it->first), ay(it->second)});
    svg.polygon(band, colour, 0.2);
  } else if (d.lo.size() == 1) {  // a point per run: the spread as an error bar
    svg.line(ax(d.lo[0].first), ay(d.lo[0].second), ax(d.hi[0].first), ay(d.hi[0].second), colour, 2);
  }
  for (const auto& [x, y] : d.mean) px.push_back({ax(x), ay(y)});
  if (px.size() > 1) svg.polyline(px, colour, 2, 1.0, series_dashed(i) ? "5 3" : "");
  if (px.size() <= 40)
    for (const auto& [x, y] : d.mean) svg.circle(ax(x), ay(y), 3.5, colour, "point", strf("%g: %.4f", x, y));
}

}  // namespace

std::string curve_chart_svg(const ChartText& text, const std::vector<CurveSeries>& series, CurveX x, bool smooth) {
  std::vector<Drawn> drawn(series.size());
  double x_max = 0, y_min = INFINITY, y_max = -INFINITY;
  for (size_t i = 0; i < series.size(); ++i) {
    std::vector<Line> runs;
    for (const auto& c : series[i].runs)
      if (!c.empty()) runs.push_back(prepared(c, x, smooth));
    if (runs.empty()) continue;
    drawn[i] = combine(runs);
    for (const Line* l : {&drawn[i].mean, &drawn[i].lo, &drawn[i].hi})
      for (const auto& [px, py] : *l)
        x_max = std::max(x_max, px), y_min = std::min(y_min, py), y_max = std::max(y_max, py);
  }
  std::vector<std::string> labels;
  std::vector<bool> bands;
  for (const auto& s : series) labels.push_back(s.label), bands.push_back(s.runs.size() > 1);
  profile::Svg svg = chart_page(text.title, text.subtitle, legend_line_count(labels));
  const auto x_text = [](double v) { return tick_number(v); };
  const auto y_text = [](double v) { return strf("%g", v); };
  const std::string x_label = x == CurveX::kSeconds ? "training time (s)" : "tokens trained";
  if (!std::isfinite(y_min)) {
    svg.text((kChartLeft + kChartRight) / 2, (kChartTop + kChartBottom) / 2, "no points recorded", 14, "middle",
             "#555555");
  } else {
    if (y_max - y_min < 1e-9) y_min -= 0.05, y_max += 0.05;
    const ChartAxis ax = make_axis(0.0, x_max > 0 ? x_max : 1.0, kChartLeft, kChartRight, false, x_text, false);
    const ChartAxis ay = make_axis(y_min, y_max, kChartBottom, kChartTop, false, y_text, true);
    draw_axes(svg, ax, ay, x_label, text.y_label, x_text, y_text);
    for (size_t i = 0; i < series.size(); ++i) draw_series(svg, drawn[i], i, ax, ay);
  }
  draw_legend(svg, labels, bands);
  return svg.finish();
}

}  // namespace nt::experiment
