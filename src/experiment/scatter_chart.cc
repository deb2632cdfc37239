// SPDX-License-Identifier: MIT
// Final figures of many runs against each other (charts.h).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "experiment/chart_frame.h"
#include "experiment/charts.h"

namespace nt::experiment {

std::string scatter_chart_svg(const ChartText& text, const std::string& x_label,
                              const std::vector<ScatterSeries>& series) {
  double x_min = INFINITY, x_max = -INFINITY, y_min = INFINITY, y_max = -INFINITY;
  for (const ScatterSeries& s : series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || x <= 0) continue;
      x_min = std::min(x_min, x), x_max = std::max(x_max, x), y_min = std::min(y_min, y), y_max = std::max(y_max, y);
    }
  std::vector<std::string> labels;
  std::vector<bool> bands;
  for (const auto& s : series) labels.push_back(s.label), bands.push_back(s.points.size() > 1);
  profile::Svg svg = chart_page(text.title, text.subtitle, legend_line_count(labels));
  const auto x_text = [](double v) { return tick_number(v); };
  const auto y_text = [](double v) { return strf("%g", v); };
  if (!std::isfinite(x_min)) {
    svg.text((kChartLeft + kChartRight) / 2, (kChartTop + kChartBottom) / 2, "no finished runs", 14, "middle",
             "#555555");
  } else {
    const bool log = x_max > 20 * x_min;
    if (x_max - x_min < 1e-12 * std::max(1.0, x_max)) x_min *= 0.9, x_max *= 1.1;
    if (y_max - y_min < 1e-9) y_min -= 0.05, y_max += 0.05;
    // A margin around the points, so that none sits on an axis.
    const double xm = log ? 1.0 : 0.05 * (x_max - x_min), ym = 0.05 * (y_max - y_min);
    const ChartAxis ax = make_axis(log ? x_min / 1.2 : std::max(0.0, x_min - xm), log ? x_max * 1.2 : x_max + xm,
                                   kChartLeft, kChartRight, log, x_text, false);
    const ChartAxis ay = make_axis(y_min - ym, y_max + ym, kChartBottom, kChartTop, false, y_text, true);
    draw_axes(svg, ax, ay, x_label + (log ? " (log scale)" : ""), text.y_label, x_text, y_text);
    for (size_t i = 0; i < series.size(); ++i) {
      const ScatterSeries& s = series[i];
      double lo = INFINITY, hi = -INFINITY, sx = 0;
      int n = 0;
      for (size_t k = 0; k < s.points.size(); ++k) {
        const auto [x, y] = s.points[k];
        if (!std::isfinite(x) || !std::isfinite(y) || x <= 0) continue;
        lo = std::min(lo, y), hi = std::max(hi, y), sx += x, ++n;
        svg.circle(ax(x), ay(y), 4.5, series_colour(i), "point",
                   strf("%s: %s, %.4f", k < s.names.size() ? s.names[k].c_str() : "", tick_number(x).c_str(), y));
      }
      if (n > 1) {  // repeats: their range at their mean x
        const double mx = ax(sx / n);
        svg.line(mx, ay(lo), mx, ay(hi), series_colour(i), 2);
        svg.line(mx - 5, ay(lo), mx + 5, ay(lo), series_colour(i), 2);
        svg.line(mx - 5, ay(hi), mx + 5, ay(hi), series_colour(i), 2);
      }
    }
  }
  draw_legend(svg, labels, bands);
  return svg.finish();
}

}  // namespace nt::experiment
