// SPDX-License-Identifier: MIT
// `nanotrain plot`: the comparison charts of a leaderboard's runs, and report.html.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "experiment/leaderboard.h"

namespace nt::experiment {

// (file name, SVG) of each chart: val_bpb and training loss against training time and tokens,
// final val_bpb against parameters and against tokens/s. One series per leaderboard row, in its
// order. The runs need their curves loaded.
std::vector<std::pair<std::string, std::string>> comparison_charts(const Leaderboard& lb);

// A self-contained page (inline CSS and SVG, nothing fetched): the leaderboard, the charts, and
// each run's settings where they differ from the best run's.
std::string report_html(const Leaderboard& lb, const std::vector<std::pair<std::string, std::string>>& charts);

// Writes the charts and report.html into out (created if needed); returns the paths written.
std::vector<std::string> write_plots(const Leaderboard& lb, const std::string& out);

}  // namespace nt::experiment
