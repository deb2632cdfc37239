// SPDX-License-Identifier: MIT
// Comparison charts of many runs (plain SVG through profile/svg.h): curves against training time
// or tokens, one colour per series (a set of runs that differ only by seed) with the band between
// its seeds' lowest and highest values where it has repeats, and scatter plots of final figures.
// The legend sits in its own column beside the plot, so labels never overlap the data or each
// other; a label too long for it is shortened and shown whole as the swatch's tooltip.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "experiment/run_record.h"

namespace nt::experiment {

// The colour of series i (ten distinct colours, then again dashed: the legend shows which).
const char* series_colour(size_t i);
bool series_dashed(size_t i);

struct CurveSeries {
  std::string label;
  std::vector<std::vector<CurvePoint>> runs;  // one curve per seed
};

enum class CurveX { kSeconds, kTokens };

struct ChartText {
  std::string title, subtitle, y_label;
};

// smooth: draw a moving average of each run's points (training loss is noisy step to step).
std::string curve_chart_svg(const ChartText& text, const std::vector<CurveSeries>& series, CurveX x, bool smooth);

struct ScatterSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y) of each run
  std::vector<std::string> names;                 // each point's tooltip
};

// The x axis is logarithmic when its values span more than a factor of 20.
std::string scatter_chart_svg(const ChartText& text, const std::string& x_label,
                              const std::vector<ScatterSeries>& series);

}  // namespace nt::experiment
