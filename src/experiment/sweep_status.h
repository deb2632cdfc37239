// SPDX-License-Identifier: MIT
// A sweep's status file, SWEEP/status.json (schema "nanotrain-sweep-status/1", documented in
// docs/EXPERIMENTS.md): the state of every run, rewritten atomically at each change, so a script
// can poll it while the sweep runs.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nt::experiment {

struct RunStatus {
  std::string name, dir;
  std::string state = "queued";  // queued, running, done, failed, interrupted
  double val_bpb = NAN;
  double seconds = 0;  // wall time of this run in this sweep process
  std::string how;     // new, resumed, overwritten (a folder with no checkpoint), skipped (already done)
  std::string error;
};

class SweepStatus {
 public:
  SweepStatus(std::string out, std::vector<RunStatus> runs);
  RunStatus& run(size_t i) { return runs_[i]; }
  size_t size() const { return runs_.size(); }
  void set_peak(double gflops, const std::string& source) { peak_ = gflops, peak_source_ = source; }
  // The sweep's own state: running, done (every run done), failed (some run failed), interrupted.
  void set_state(const std::string& s) { state_ = s; }
  int count(const std::string& state) const;
  nlohmann::json to_json() const;
  void write() const;  // SWEEP/status.json, atomically

 private:
  std::string out_, state_ = "running", peak_source_;
  double peak_ = 0;
  std::vector<RunStatus> runs_;
};

std::string status_path(const std::string& out);

}  // namespace nt::experiment
