// SPDX-License-Identifier: MIT
#include "train/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <sstream>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "train/tensorboard_log.h"
#include "model/weights_io.h"

namespace nt {

namespace fs = std::filesystem;

namespace {

// Keeps the first `lines` lines of a file (a resumed run rewrites what followed).
void truncate_lines(const std::string& path, int64_t lines) {
  if (!fs::exists(path)) return;
  std::istringstream in(read_file(path));
  std::string line, kept;
  for (int64_t i = 0; i < lines && std::getline(in, line); ++i) kept += line + "\n";
  write_file_atomic(path, kept);
}

constexpr const char* kLockFile = ".lock";
// A run's files: their presence makes a folder a run's.
constexpr const char* kRunMarks[] = {kConfigFile, "metrics.jsonl", "checkpoints", kWeightsFile, "summary.json"};

// What the folder holds besides the lock, by name.
std::vector<std::string> contents(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename() != kLockFile) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string listing(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 4; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 4) s += strf(" and %zu more", names.size() - 4);
  return s;
}

bool holds_a_run(const std::string& dir) {
  for (const char* m : kRunMarks)
    if (fs::exists(fs::symlink_status(fs::path(dir) / m))) return true;
  return false;
}

// A new run's id: 64 random bits in hex.
std::string new_run_id() {
  std::random_device rd;
  const uint64_t x = (uint64_t(rd()) << 32) ^ rd();
  return strf("%016llx", (unsigned long long)x);
}

// The run id in a run folder's config.json ("" where the file or the id is missing).
std::string stored_run_id(const std::string& config_path) {
  if (!fs::exists(config_path)) return "";
  try {
    const auto j = read_json_file(config_path);
    return j.contains("run_id") && j["run_id"].is_string() ? j["run_id"].get<std::string>() : "";
  } catch (const nlohmann::json::exception&) {
    fail("%s: not valid JSON", config_path.c_str());
  }
}

}  // namespace

RunFolder::RunFolder(std::string dir, RunMode mode)
    : dir_(std::move(dir)), resume_(mode == RunMode::kResume), follower_(mode == RunMode::kFollower) {
  if (follower_) return;
  std::error_code ec;
  if (resume_ && !fs::is_directory(dir_, ec)) fail("--resume %s: no such run folder (no checkpoints to resume)", dir_.c_str());
  if (fs::exists(fs::symlink_status(dir_, ec)) && !fs::is_directory(fs::symlink_status(dir_, ec)))
    fail("%s: not a folder", dir_.c_str());
  created_ = !fs::exists(dir_, ec);
  make_dirs(dir_);
  bool lock_created = false;
  lock_fd_ = lock_folder(dir_, kLockFile, "run", &lock_created);
  try {
    claim(mode, /*lock_was_there=*/!lock_created);
  } catch (...) {
    // A folder refused is left as it was: no lock file of ours in it. (No destructor runs for a
    // constructor that throws.)
    if (lock_created) fs::remove(fs::path(dir_) / kLockFile, ec);
    release();
    throw;
  }
}

void RunFolder::claim(RunMode mode, bool lock_was_there) {
  if (resume_) {
    run_id_ = stored_run_id(config_path());
    return;
  }
  const std::vector<std::string> there = contents(dir_);
  if (!there.empty()) {
    // A lock file left by an earlier run marks its folder too: a run killed before its first
    // whole file leaves only that and temporaries.
    const bool run = lock_was_there || holds_a_run(dir_);
    if (!run)
      fail("%s: not empty (it holds %s); a new run needs an empty or new folder", dir_.c_str(), listing(there).c_str());
    if (mode != RunMode::kOverwrite)
      fail("%s: already holds a run (%s); continue it with --resume %s, or start over with --overwrite", dir_.c_str(),
           listing(there).c_str(), dir_.c_str());
    for (const std::string& name : there) fs::remove_all(fs::path(dir_) / name);
  }
  run_id_ = new_run_id();
}

RunFolder::~RunFolder() { release(); }

void RunFolder::release() {
  tensorboard_.reset();
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  metrics_fd_ = -1;
  // A run that stopped before writing anything (a bad flag, missing data) leaves no folder behind.
  std::error_code ec;
  if (created_ && contents(dir_).empty()) {
    fs::remove(fs::path(dir_) / kLockFile, ec);
    fs::remove(dir_, ec);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
  lock_fd_ = -1;
}

std::string RunFolder::file(const char* name) const { return (fs::path(dir_) / name).string(); }

std::string RunFolder::save_tokenizer(const Tokenizer& tok) const { return follower_ ? "" : tok.save_to_dir(dir_); }

void RunFolder::write_json(const std::string& path, const nlohmann::json& j) const {
  if (!follower_) write_file_atomic(path, j.dump(2) + "\n");
}

void RunFolder::write_text(const std::string& path, const std::string& text) const {
  if (!follower_) write_file_atomic(path, text);
}

void RunFolder::open_metrics(int64_t keep_lines) {
  const std::string path = metrics_path();
  metrics_lines_ = 0;
  if (resume_ || follower_) metrics_lines_ = keep_lines;
  if (follower_) return;
  if (resume_) truncate_lines(path, keep_lines);
  // The events of the dropped lines go too, whether or not this run writes events.
  if (resume_) trim_event_files(tensorboard_dir(dir_), keep_lines);
  // Never through a link into somebody else's file, never into a FIFO or a device.
  refuse_non_regular(path);
  metrics_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (resume_ ? O_APPEND : O_TRUNC), 0644);
  if (metrics_fd_ < 0) fail("%s: cannot write: %s", path.c_str(), std::strerror(errno));
}

void RunFolder::log_metric(const nlohmann::json& j) {
  if (follower_) {
    ++metrics_lines_;
    return;
  }
  const std::string line = j.dump() + "\n";
  for (size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(metrics_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("%s: write failed: %s", metrics_path().c_str(), std::strerror(errno));
    done += size_t(n);
  }
  ++metrics_lines_;
  if (tensorboard_) tensorboard_->log(j);
}

void RunFolder::open_tensorboard() {
  if (!follower_) tensorboard_ = std::make_unique<TensorBoardLog>(dir_, metrics_lines_);
}

std::string RunFolder::read_metrics() const { return read_file(metrics_path()); }

CheckpointData RunFolder::newest_valid_checkpoint() const {
  CheckpointData ck = nt::newest_valid_checkpoint(dir_, warn_line);
  if (!run_id_.empty() && !ck.state.run_id.empty() && ck.state.run_id != run_id_)
    fail("%s: written by run %s, not by this folder's run %s (config.json); refusing to continue another run",
         ck.path.c_str(), ck.state.run_id.c_str(), run_id_.c_str());
  return ck;
}

std::string default_run_dir() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", std::localtime(&t));
  std::string dir = buf;
  for (int i = 2; fs::exists(dir) && i < 1000; ++i) dir = strf("%s-%d", buf, i);
  return dir;
}

void warn_line(const std::string& s) { std::fprintf(stderr, "nanotrain: warning: %s\n", s.c_str()); }

TrainedRun open_trained_run(const std::string& dir) {
  if (!fs::is_directory(dir)) fail("--run-dir %s: not a directory", dir.c_str());
  TrainedRun r;
  r.dir = dir;
  r.weights_path = (fs::path(dir) / kWeightsFile).string();
  const std::string cfg_path = (fs::path(dir) / kConfigFile).string();
  if (!fs::exists(r.weights_path)) fail("%s: missing (the run has not finished or saved its weights)", r.weights_path.c_str());
  nlohmann::json cfg;
  try {
    cfg = read_json_file(cfg_path);
  } catch (const nlohmann::json::exception&) {
    fail("%s: not valid JSON", cfg_path.c_str());
  }
  std::string spec;
  try {
    spec = cfg.at("tokenizer").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    fail("%s: has no \"tokenizer\" entry", cfg_path.c_str());
  }
  r.tokenizer = load_tokenizer_in_dir(dir, spec);
  // The identity compared is the one the weights carry (nanotrain always writes it); only weights
  // written by other tools (PyTorch) fall back to config.json's.
  std::string trained_with = read_weights_metadata(r.weights_path, "tokenizer_id");
  const std::string* source = &r.weights_path;
  if (trained_with.empty() && cfg.contains("tokenizer_id") && cfg["tokenizer_id"].is_string())
    trained_with = cfg["tokenizer_id"].get<std::string>(), source = &cfg_path;
  if (trained_with.empty()) fail("%s: has no tokenizer identity in its metadata", r.weights_path.c_str());
  if (trained_with != to_hex(r.tokenizer->identity()))
    fail("%s: the tokenizer %s is not the one this model was trained with", source->c_str(), spec.c_str());
  r.model = read_weights_config(r.weights_path);
  if (uint32_t(r.model.vocab_size) < r.tokenizer->vocab_size())
    fail("%s: model vocabulary %d is smaller than the tokenizer's %u", r.weights_path.c_str(), r.model.vocab_size,
         r.tokenizer->vocab_size());
  return r;
}

}  // namespace nt
