// SPDX-License-Identifier: MIT
// The leaderboard as a terminal table, as Markdown, and as JSON (schema "nanotrain-runs/1",
// documented in docs/EXPERIMENTS.md).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiment/leaderboard.h"

namespace nt::experiment {

// The table's cells: a header row, then one row per leaderboard row.
std::vector<std::vector<std::string>> leaderboard_cells(const Leaderboard& lb);

std::string leaderboard_text(const Leaderboard& lb);      // aligned columns
std::string leaderboard_markdown(const Leaderboard& lb);  // a GitHub-flavoured table
nlohmann::json leaderboard_json(const Leaderboard& lb);

// "1.2345 ± 0.0012" (the spread only where there are repeats), "-" when unknown.
std::string stat_text(const Stat& s, const char* fmt);
// 12.3M, 45.6k, 789: counts as the tables and charts show them.
std::string si_count(double v);

}  // namespace nt::experiment
