// SPDX-License-Identifier: MIT
// What every comparison chart shares: the page, the plot area, axes with round ticks whose labels
// never collide, and the legend column.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "profile/svg.h"

namespace nt::experiment {

constexpr double kChartLeft = 84, kChartRight = 640, kChartTop = 64, kChartBottom = 380;
constexpr double kLegendX = 664, kChartWidth = 980, kLegendRow = 18;

// An axis: linear, or logarithmic over positive values; maps values to pixels.
struct ChartAxis {
  double lo = 0, hi = 1, p_lo = 0, p_hi = 1;
  bool log = false;
  double operator()(double v) const;
  std::vector<double> ticks;
};

// Round ticks covering [lo, hi], as many as fit their labels (label_px: a label's width in pixels
// for a value), on a log axis 1-2-5 steps per decade.
ChartAxis make_axis(double lo, double hi, double p_lo, double p_hi, bool log,
                    const std::function<std::string(double)>& label, bool vertical);

// The page: title, subtitle, the grid, both axes with their labels; height fits the legend's rows.
profile::Svg chart_page(const std::string& title, const std::string& subtitle, size_t legend_rows);
void draw_axes(profile::Svg& svg, const ChartAxis& x, const ChartAxis& y, const std::string& x_label,
               const std::string& y_label, const std::function<std::string(double)>& x_text,
               const std::function<std::string(double)>& y_text);

// One legend row: a swatch in the series' colour (dashed after ten) and the label, shortened to fit.
void legend_row(profile::Svg& svg, size_t row, size_t series, const std::string& label, bool band);

// Pixels a label of n characters takes at 11 px.
inline double label_px(const std::string& s) { return 6.4 * double(s.size()); }

// Tick text: plain numbers (%g), and counts with k / M / G.
std::string tick_number(double v);

}  // namespace nt::experiment
