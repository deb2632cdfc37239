// SPDX-License-Identifier: MIT
#include "train/tensorboard_log.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <filesystem>

#include "core/check.h"
#include "core/files.h"
#include "core/system.h"

namespace nt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEventPrefix = "events.out.tfevents.";

void add_scalars(const nlohmann::json& j, const std::string& prefix, std::vector<std::pair<std::string, float>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "step" || it.key() == "type") continue;
    if (it->is_object())
      add_scalars(*it, prefix + it.key() + "/", out);
    else if (it->is_number())
      out.push_back({prefix + it.key(), it->get<float>()});
  }
}

// The metrics line an event file's first event stands for: the name's last dot-separated part,
// or -1 for a name this writer does not make.
int64_t first_line_of(const std::string& name) {
  if (name.rfind(kEventPrefix, 0) != 0) return -1;
  const size_t dot = name.rfind('.');
  const std::string tail = name.substr(dot + 1);
  if (tail.empty() || tail.size() > 18 || !std::all_of(tail.begin(), tail.end(), ::isdigit)) return -1;
  return std::stoll(tail);
}

// Keeps the first `events` data events of one file (and its version record).
void cut_file(const std::string& path, int64_t events) {
  const std::string contents = read_file(path);
  bool clean = false;
  const std::vector<profile::Record> records = profile::read_records(contents, &clean);
  size_t end = 0;
  int64_t kept = 0;
  for (const profile::Record& r : records) {
    const bool version = !profile::decode_event(r.data, path).file_version.empty();
    if (!version && kept == events) break;
    kept += version ? 0 : 1;
    end = r.end;
  }
  if (kept == 0) return (void)fs::remove(path);
  if (end < contents.size()) write_file_atomic(path, std::string_view(contents).substr(0, end));
}

}  // namespace

std::string tensorboard_dir(const std::string& run_dir) { return (fs::path(run_dir) / "tensorboard").string(); }

std::vector<std::pair<std::string, float>> metric_scalars(const nlohmann::json& line) {
  std::vector<std::pair<std::string, float>> out;
  if (!line.is_object()) return out;
  std::string type = line.contains("type") && line["type"].is_string() ? line["type"].get<std::string>() : "metrics";
  if (type == "step") type = "train";
  add_scalars(line, type + "/", out);
  return out;
}

void trim_event_files(const std::string& dir, int64_t keep_lines) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const int64_t first = first_line_of(entry.path().filename().string());
    if (first < 0 || !fs::is_regular_file(entry.symlink_status())) continue;  // never through a link
    if (first >= keep_lines)
      fs::remove(entry.path());
    else
      cut_file(entry.path().string(), keep_lines - first);
  }
}

TensorBoardLog::TensorBoardLog(const std::string& run_dir, int64_t first_line) {
  const std::string dir = tensorboard_dir(run_dir);
  make_dirs(dir);
  trim_event_files(dir, first_line);
  const auto seconds = int64_t(std::floor(profile::wall_time_now()));
  const std::string name =
      strf("%s%010" PRId64 ".%s.%d.%" PRId64, kEventPrefix, seconds, hostname().c_str(), int(::getpid()), first_line);
  file_ = std::make_unique<profile::EventFileWriter>((fs::path(dir) / name).string());
}

void TensorBoardLog::log(const nlohmann::json& line) {
  profile::ScalarEvent e;
  e.wall_time = profile::wall_time_now();
  e.step =
      line.is_object() && line.contains("step") && line["step"].is_number_integer() ? line["step"].get<int64_t>() : 0;
  e.values = metric_scalars(line);
  file_->write(e);
}

}  // namespace nt
