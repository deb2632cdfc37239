// SPDX-License-Identifier: MIT
// `train --tensorboard`: every metrics.jsonl line also becomes one TensorBoard event in
// RUN/tensorboard/, so `tensorboard --logdir runs/` shows the run's curves. The events follow
// metrics.jsonl line for line: each event file's name ends in the metrics line its first event
// stands for, so a resumed run can drop the events its checkpoint does not count, as it drops
// those lines, and steps are never shown twice. Format: docs/FORMATS.md.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "profile/event_file.h"

namespace nt {

// RUN/tensorboard.
std::string tensorboard_dir(const std::string& run_dir);

// The scalars of one metrics.jsonl line: every number in it but "step", tagged
// "<type>/<key>" ("train/loss" for the "step" lines, "eval/val_bpb", "core/core"), a nested
// object's numbers as "<type>/<key>/<inner key>" ("core/tasks/hellaswag/accuracy").
std::vector<std::pair<std::string, float>> metric_scalars(const nlohmann::json& line);

// Removes the events of lines from `keep_lines` on (0-based) from the event files in dir: a file
// that starts at or after it is deleted, one that runs past it is cut (atomically); a record cut
// short by a crash is dropped. Files not named as this writer names them are left alone.
void trim_event_files(const std::string& dir, int64_t keep_lines);

class TensorBoardLog {
 public:
  // Opens a new event file in RUN/tensorboard/ whose first event is metrics line `first_line`
  // (the lines the run has kept so far), after trimming older files to the lines before it.
  TensorBoardLog(const std::string& run_dir, int64_t first_line);
  void log(const nlohmann::json& line);  // one event: the line's step, the time now, its scalars
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<profile::EventFileWriter> file_;
};

}  // namespace nt
