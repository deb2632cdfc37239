// SPDX-License-Identifier: MIT
#include "train/run_folder.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "core/check.h"
#include "core/files.h"
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

}  // namespace

RunFolder::RunFolder(std::string dir, bool resume) : dir_(std::move(dir)), resume_(resume) { make_dirs(dir_); }

std::string RunFolder::file(const char* name) const { return (fs::path(dir_) / name).string(); }

std::string RunFolder::save_tokenizer(const Tokenizer& tok) const { return tok.save_to_dir(dir_); }

void RunFolder::write_json(const std::string& path, const nlohmann::json& j) const {
  write_file_atomic(path, j.dump(2) + "\n");
}

void RunFolder::write_text(const std::string& path, const std::string& text) const { write_file_atomic(path, text); }

void RunFolder::open_metrics(int64_t keep_lines) {
  const std::string path = metrics_path();
  metrics_lines_ = 0;
  if (resume_) {
    metrics_lines_ = keep_lines;
    truncate_lines(path, keep_lines);
  }
  metrics_.open(path, resume_ ? std::ios::app : std::ios::trunc);
  if (!metrics_) fail("%s: cannot write", path.c_str());
}

void RunFolder::log_metric(const nlohmann::json& j) {
  metrics_ << j.dump() << "\n";
  metrics_.flush();
  if (!metrics_) fail("%s: write failed: %s", metrics_path().c_str(), std::strerror(errno));
  ++metrics_lines_;
}

std::string RunFolder::read_metrics() const { return read_file(metrics_path()); }

CheckpointData RunFolder::newest_valid_checkpoint() const { return nt::newest_valid_checkpoint(dir_, warn_line); }

std::string default_run_dir() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
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
    cfg = nlohmann::json::parse(read_file(cfg_path));
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
  if (cfg.contains("tokenizer_id") && cfg["tokenizer_id"] != to_hex(r.tokenizer->identity()))
    fail("%s: the tokenizer in the run folder does not match the one the model was trained with", cfg_path.c_str());
  r.model = read_weights_config(r.weights_path);
  if (uint32_t(r.model.vocab_size) < r.tokenizer->vocab_size())
    fail("%s: model vocabulary %d is smaller than the tokenizer's %u", r.weights_path.c_str(), r.model.vocab_size,
         r.tokenizer->vocab_size());
  return r;
}

}  // namespace nt
