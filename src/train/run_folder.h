// SPDX-License-Identifier: MIT
// A run folder and every file in it:
//   config.json        the run's resolved settings and its flags as given
//   metrics.jsonl      one line per step and per evaluation
//   summary.json       the final figures (train/train_summary.h)
//   loss.svg           the loss chart; profile.svg and trace.json with --profile
//   tensorboard/       TensorBoard event files with --tensorboard (train/tensorboard_log.h)
//   model.safetensors  the final weights, with the tokenizer's name and identity
//   checkpoints/       step-NNNNNNNN.safetensors (train/checkpoint.h)
//   the tokenizer's own files (tokenizer/tokenizer.h)
//   .lock              held (flock) by the one process writing the run
// Training writes one through RunFolder; sample and eval open a finished one with
// open_trained_run. A folder belongs to one run: a new run refuses a folder that holds anything
// (a run: unless --overwrite, which removes it first), one process at a time holds the lock
// (the kernel drops it when the process dies, so a dead holder's lock is simply taken over),
// and every checkpoint carries the run's id, so a checkpoint of another run is never resumed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"

namespace nt {

class TensorBoardLog;

// The files sample and eval read, named here once.
inline constexpr const char* kConfigFile = "config.json";
inline constexpr const char* kWeightsFile = "model.safetensors";

// kFollower: a rank other than 0 of a job over several processes; it knows the folder's name
// but neither claims nor writes it (every writing call is a no-op), since rank 0 does.
enum class RunMode { kNew, kOverwrite, kResume, kFollower };

class RunFolder {
 public:
  // Claims the folder: creates it (and its parents) if needed, takes its lock (an error naming
  // the process that holds it), and for a new run checks that it is empty (kOverwrite first
  // removes an old run's files; a folder with anything else in it is refused either way). A
  // resumed run keeps its id (config.json's); a new one gets a fresh one.
  RunFolder(std::string dir, RunMode mode);
  ~RunFolder();  // a folder this process created and left empty is removed again
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::string& dir() const { return dir_; }
  bool writer() const { return !follower_; }
  const std::string& run_id() const { return run_id_; }  // "" for a run older than run ids
  std::string file(const char* name) const;  // a path inside the folder
  std::string config_path() const { return file(kConfigFile); }
  std::string metrics_path() const { return file("metrics.jsonl"); }
  std::string summary_path() const { return file("summary.json"); }
  std::string loss_chart_path() const { return file("loss.svg"); }
  std::string profile_chart_path() const { return file("profile.svg"); }
  std::string trace_path() const { return file("trace.json"); }
  std::string weights_path() const { return file(kWeightsFile); }

  // The tokenizer's files; returns the spec that config.json and the weights record.
  std::string save_tokenizer(const Tokenizer& tok) const;
  // JSON files as they are kept: indented, atomically replaced.
  void write_json(const std::string& path, const nlohmann::json& j) const;
  void write_text(const std::string& path, const std::string& text) const;

  // metrics.jsonl: a new run truncates it; a resumed one keeps the first `keep_lines` lines
  // (those its checkpoint counted) and appends.
  void open_metrics(int64_t keep_lines);
  void log_metric(const nlohmann::json& j);  // one line, flushed
  // From now on every metrics line is also a TensorBoard event (after open_metrics).
  void open_tensorboard();
  int64_t metrics_lines() const { return metrics_lines_; }
  std::string read_metrics() const;

  std::string checkpoint_path(int64_t step) const { return nt::checkpoint_path(dir_, step); }
  std::vector<std::string> checkpoints() const { return list_checkpoints(dir_); }  // newest first
  // The newest checkpoint that verifies (warning about invalid ones it skips); one written by
  // another run (its run id) is an error.
  CheckpointData newest_valid_checkpoint() const;
  void prune_checkpoints(int keep) const {
    if (!follower_) nt::prune_checkpoints(dir_, keep);
  }

 private:
  void claim(RunMode mode, bool lock_was_there);  // the checks after the lock is taken
  void release();            // closes the files and the lock, and removes a folder left empty

  std::string dir_;
  bool resume_, follower_, created_ = false;
  int lock_fd_ = -1;
  std::string run_id_;
  int metrics_fd_ = -1;
  int64_t metrics_lines_ = 0;
  std::unique_ptr<TensorBoardLog> tensorboard_;
};

// "runs/<date>-<time>" for a run without --run-dir ("-2", "-3", ... after it if that exists).
std::string default_run_dir();

// A warning line on stderr ("nanotrain: warning: ...").
void warn_line(const std::string& s);

// A finished run, opened for sample / eval: its model's shape, weights and tokenizer.
struct TrainedRun {
  std::string dir, weights_path;
  ModelConfig model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Errors name the missing or broken file.
TrainedRun open_trained_run(const std::string& dir);

}  // namespace nt
