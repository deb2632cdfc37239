// SPDX-License-Identifier: MIT
// The leaderboard: runs filtered (--where), grouped where they differ only by seed, and sorted by
// val_bpb (or CORE, or throughput), with the settings that differ between them. Formatting is in
// leaderboard_format.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiment/run_record.h"

namespace nt::experiment {

// --where KEY=V1,V2: the run's setting KEY (or its "state" or "name") is one of the values.
struct Where {
  std::string key;
  std::vector<std::string> values;
};
Where parse_where(const std::string& text);  // fails naming --where
bool matches(const RunRecord& r, const std::vector<Where>& where);

// Mean and spread (the sample standard deviation; 0 for one value) of the finite values.
struct Stat {
  double mean = NAN, spread = NAN, min = NAN, max = NAN;
  int n = 0;
};
Stat stat_of(const std::vector<double>& xs);

struct LeaderRow {
  std::string label;         // the differing settings, seed left out
  std::vector<size_t> runs;  // indices into Leaderboard::runs
  Stat val_bpb, core, tokens_per_second, mfu, tokens;
  int64_t params = 0;
  std::string state;  // "done", or the states of its runs ("2 done, 1 running")
};

enum class SortKey { kValBpb, kCore, kTokensPerSecond, kName };
SortKey parse_sort_key(const std::string& s);  // fails naming --sort
const char* sort_key_name(SortKey k);

struct LeaderOptions {
  SortKey sort = SortKey::kValBpb;
  bool group_seeds = true;  // one row per set of runs that differ only by seed
  std::vector<Where> where;
};

struct Leaderboard {
  std::vector<RunRecord> runs;         // those that pass the filters, in sorted order
  std::vector<std::string> differing;  // the settings that differ between them
  std::vector<LeaderRow> rows;         // sorted
  SortKey sort = SortKey::kValBpb;
};

Leaderboard make_leaderboard(std::vector<RunRecord> runs, const LeaderOptions& opt);

// The differing settings of one run as "k=v ..." without seed: its group's label.
std::string group_label(const RunRecord& r, const std::vector<std::string>& differing);

}  // namespace nt::experiment
