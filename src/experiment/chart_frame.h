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

// The page: title and subtitle; its height fits the legend's lines.
profile::Svg chart_page(const std::string& title, const std::string& subtitle, size_t legend_lines);
void draw_axes(profile::Svg& svg, const ChartAxis& x, const ChartAxis& y, const std::string& x_label,
               const std::string& y_label, const std::function<std::string(double)>& x_text,
               const std::function<std::string(double)>& y_text);

// A label wrapped at spaces into the legend's width: three lines at most, the last shortened.
std::vector<std::string> legend_lines(const std::string& label);
size_t legend_line_count(const std::vector<std::string>& labels);
// The legend: per series a swatch in its colour (dashed after ten; a band where it has repeats)
// and its label on as many lines as it needs; the whole label is the row's tooltip.
void draw_legend(profile::Svg& svg, const std::vector<std::string>& labels, const std::vector<bool>& bands);

// Pixels a label of n characters takes at 11 px.
inline double label_px(const std::string& s) { return 6.4 * double(s.size()); }

// Tick text: plain numbers (%g), and counts with k / M / G.
std::string tick_number(double v);

}  // namespace nt::experiment
