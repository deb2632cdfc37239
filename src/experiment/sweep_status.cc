// SPDX-License-Identifier: MIT
#include "experiment/sweep_status.h"

#include <unistd.h>

#include <filesystem>

#include "core/check.h"
#include "core/files.h"
#include "core/system.h"

namespace nt::experiment {

std::string status_path(const std::string& out) { return (std::filesystem::path(out) / "status.json").string(); }

SweepStatus::SweepStatus(std::string out, std::vector<RunStatus> runs, bool shared)
    : out_(std::move(out)), shared_(shared), runs_(std::move(runs)), owned_(runs_.size(), !shared) {}

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
    if (!r.worker.empty()) j["worker"] = r.worker;
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

void SweepStatus::settle() {
  const int n = int(runs_.size()), done = count("done"), failed = count("failed");
  if (done == n)
    state_ = "done";
  else if (done + failed == n)
    state_ = "failed";
  else
    state_ = count("running") > 0 ? "running" : "interrupted";
}

// The entries of the runs this process does not own, as the other processes last wrote them (a run
// of the same name at the same place; anything unreadable is ignored: this process's view stands).
void SweepStatus::merge_from_file() {
  nlohmann::json disk;
  try {
    disk = nlohmann::json::parse(read_file(status_path(out_)));
  } catch (const std::exception&) {
    return;
  }
  if (!disk.is_object() || !disk.contains("runs") || !disk["runs"].is_array()) return;
  const nlohmann::json& list = disk["runs"];
  for (size_t i = 0; i < runs_.size() && i < list.size(); ++i) {
    const nlohmann::json& j = list[i];
    if (owned_[i] || !j.is_object() || j.value("name", "") != runs_[i].name) continue;
    RunStatus& r = runs_[i];
    r.state = j.value("state", r.state);
    r.val_bpb = j.contains("val_bpb") && j["val_bpb"].is_number() ? j["val_bpb"].get<double>() : NAN;
    r.seconds = j.value("seconds", 0.0);
    r.how = j.value("how", "");
    r.error = j.value("error", "");
    r.worker = j.value("worker", "");
  }
  if (peak_ <= 0 && disk.contains("peak_gflops") && disk["peak_gflops"].is_number())
    peak_ = disk["peak_gflops"].get<double>(), peak_source_ = disk.value("peak_source", "");
}

void SweepStatus::write() {
  if (!shared_) return write_file_atomic(status_path(out_), to_json().dump(2) + "\n");
  const HeldLock lock(wait_lock_file(out_, ".status.lock"));
  merge_from_file();
  write_file_atomic(status_path(out_), to_json().dump(2) + "\n");
}

}  // namespace nt::experiment
