// SPDX-License-Identifier: MIT
// Runs a sweep's runs one after another in this process, each an ordinary run folder under the
// sweep folder: SWEEP/sweep.json holds the plan, SWEEP/status.json each run's state. Started
// again on the same folder it skips the runs that finished (summary.json there, settings as
// planned), resumes an interrupted one from its newest checkpoint and runs the rest. A run that
// fails is recorded and the sweep goes on. The MFU's peak is measured once for the sweep (per
// device and precision) and given to every run.
// With `parallel`, several processes (one per host, over a shared file system, or the ranks of an
// MPI launch) work on one sweep folder: each claims a run by locking SWEEP/.claims/RUN.lock, so a
// run trains in one process at a time; a claim of a process that died is free again, and its run
// resumes from its checkpoint in the next process that claims it.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiment/sweep_plan.h"
#include "experiment/sweep_status.h"
#include "train/train_config.h"

namespace nt::experiment {

struct SweepRun {
  PlannedRun plan;
  TrainConfig cfg;  // every flag of the run (its run_dir is set by the sweep)
};

// SWEEP/sweep.json's content (schema "nanotrain-sweep/1").
nlohmann::json sweep_plan_json(const SweepSpec& spec, const std::vector<SweepRun>& runs);
// The runs of a stored plan (to continue a sweep without repeating its flags). Errors name the file.
std::vector<SweepRun> runs_from_plan(const nlohmann::json& plan, const std::string& path);
std::string plan_path(const std::string& out);

// What identifies a run's training: its flags without where it is written, the MFU's peak and the
// flags a resumed run may change.
nlohmann::json run_identity(const TrainConfig& cfg);

struct SweepOptions {
  std::string out;
  bool verbose = false;  // the runs' own progress lines
  bool quiet = false;    // not even a line per run
  bool parallel = false;  // other sweep processes share the folder (--parallel-hosts)
};

// Returns the final status (its "state": done, failed when a run failed, or with `parallel`
// running while other processes still train runs). A SIGINT / SIGTERM
// during a run stops it cleanly (a checkpoint written), records the sweep as interrupted and
// rethrows nt::Interrupted.
SweepStatus run_sweep(std::vector<SweepRun> runs, const nlohmann::json& plan, const SweepOptions& opt);

}  // namespace nt::experiment
