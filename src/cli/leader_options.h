// SPDX-License-Identifier: MIT
// The options `runs` and `plot` share: which runs, how they are grouped and in what order.
#pragma once
#include <string>
#include <vector>

#include "experiment/leaderboard.h"

namespace nt::cli {

inline experiment::LeaderOptions leader_options(const std::vector<std::string>& where, const std::string& sort,
                                                bool per_run) {
  experiment::LeaderOptions lo;
  for (const std::string& w : where) lo.where.push_back(experiment::parse_where(w));
  lo.sort = experiment::parse_sort_key(sort);
  lo.group_seeds = !per_run;
  return lo;
}

}  // namespace nt::cli
