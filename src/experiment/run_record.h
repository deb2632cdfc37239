// SPDX-License-Identifier: MIT
// One run folder as the experiment tools see it: its state, its settings and its figures, read
// from config.json, summary.json and (for an unfinished run, or for charts) metrics.jsonl. Reading
// never fails: a folder whose files are missing or broken comes back with a state that says so.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nt::experiment {

// done: summary.json; running: another process holds the folder's lock; interrupted: checkpoints
// but no summary; started: config.json only; broken: config.json or summary.json unreadable.
enum class RunState { kDone, kRunning, kInterrupted, kStarted, kBroken };
const char* run_state_name(RunState s);

// One point of a curve: training seconds, tokens trained so far, and the value.
struct CurvePoint {
  double seconds, tokens, value;
};

struct RunRecord {
  std::string dir;   // as found
  std::string name;  // the folder's path below the folder that was searched ("" prefix dropped)
  RunState state = RunState::kBroken;
  std::string error;  // why a broken run is broken
  // The run's settings by flag name (without "--"): the flags as given, with unset ones (0 or "")
  // filled in from the resolved configuration where it has them (settings.h).
  std::map<std::string, std::string> settings;
  // The figures: from summary.json for a finished run, else from the last lines of metrics.jsonl
  // (val_bpb then only when an evaluation ran). NaN / 0 where unknown.
  double val_bpb = NAN, core = NAN, final_loss = NAN;
  double train_seconds = 0, tokens_per_second = 0, mfu = 0;
  int64_t tokens = 0, steps = 0, params = 0;
  // With curves loaded: every step's training loss and every evaluation's val_bpb.
  std::vector<CurvePoint> loss, val_bpb_curve;
};

// Reads one folder. With curves, also the whole of metrics.jsonl.
RunRecord load_run(const std::string& dir, bool curves = false);

// Whether a folder looks like a run's (config.json, summary.json or checkpoints/ in it).
bool is_run_folder(const std::string& dir);

// The run folders at or below each path (a run folder itself, or any folder searched three levels
// deep), in name order; each record's name is its path relative to the path given. A path that
// does not exist is an error naming it.
std::vector<RunRecord> load_runs(const std::vector<std::string>& paths, bool curves = false);

}  // namespace nt::experiment
