// SPDX-License-Identifier: MIT
#include "experiment/sweep_status.h"

#include <unistd.h>

#include <filesystem>

#include "core/check.h"
#include "core/files.h"
#include "core/system.h"

namespace nt::experiment {

std::string status_path(const std::string& out) { return (std::filesystem::path(out) / "status.json").string(); }

SweepStatus::SweepStatus(std::string out, std::vector<RunStatus> runs) : out_(std::move(out)), runs_(std::move(runs)) {}

int SweepStatus::count(const std::string& state) const {
  int n = 0;
  for (const RunStatus& r : runs_) n += r.state == state;
  return n;
}

nlohmann::json SweepStatus::to_json() const {
  nlohmann::json runs = nlohmann::json::array();
  for (const RunStatus& r : runs_) {
    nlohmann::json j = {{"name", r.name},
                        {"dir", r.dir},
                        {"state", r.state},
                        {"val_bpb", std::isfinite(r.val_bpb) ? nlohmann::json(r.val_bpb) : nlohmann::json(nullptr)},
                        {"seconds", r.seconds},
                        {"how", r.how}};
    if (!r.error.empty()) j["error"] = r.error;
    runs.push_back(j);
  }
  nlohmann::json counts = nlohmann::json::object();
  for (const char* s : {"queued", "running", "done", "failed", "interrupted"}) counts[s] = count(s);
  return {{"schema", "nanotrain-sweep-status/1"},
          {"out", out_},
          {"state", state_},
          {"pid", int(::getpid())},
          {"updated", utc_time("%Y-%m-%dT%H:%M:%SZ")},
          {"peak_gflops", peak_},
          {"peak_source", peak_source_},
          {"counts", counts},
          {"runs", runs}};
}

void SweepStatus::write() const { write_file_atomic(status_path(out_), to_json().dump(2) + "\n"); }

}  // namespace nt::experiment
