// SPDX-License-Identifier: MIT
// A sweep's status file, SWEEP/status.json (schema "nanotrain-sweep-status/1", documented in
// docs/EXPERIMENTS.md): the state of every run, rewritten atomically at each change, so a script
// can poll it while the sweep runs. Several sweep processes sharing the folder (--parallel-hosts)
// each write the runs they work on into the file under a lock and keep the others' entries.
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
  std::string worker;  // "PID on HOST" of the process that ran or runs it
};

class SweepStatus {
 public:
  // shared: other processes write the same file; write() keeps their runs' entries.
  SweepStatus(std::string out, std::vector<RunStatus> runs, bool shared = false);
  RunStatus& run(size_t i) { return runs_[i]; }
  size_t size() const { return runs_.size(); }
  void set_peak(double gflops, const std::string& source) { peak_ = gflops, peak_source_ = source; }
  // The sweep's own state: running, done (every run done), failed (some run failed), interrupted.
  void set_state(const std::string& s) { state_ = s; }
  // Run i's entry is this process's to write (it claimed the run) from now on.
  void own(size_t i) { owned_[i] = true; }
  int count(const std::string& state) const;
  // The sweep's state from its runs' once this process has no run left to do: done, failed,
  // running (other processes still at work) or interrupted (runs left for a later start).
  void settle();
  nlohmann::json to_json() const;
  // SWEEP/status.json, atomically; shared, first reads the other processes' entries into this one.
  void write();

 private:
  void merge_from_file();
  std::string out_, state_ = "running", peak_source_;
  double peak_ = 0;
  bool shared_ = false;
  std::vector<RunStatus> runs_;
  std::vector<bool> owned_;
};

std::string status_path(const std::string& out);

}  // namespace nt::experiment
