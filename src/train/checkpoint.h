// SPDX-License-Identifier: MIT
// Training checkpoints: RUN_DIR/checkpoints/step-NNNNNNNN.safetensors.
//
// A checkpoint is a safetensors file holding the parameters ("param.<name>"), the optimizer
// state ("opt.m.<name>": Adam first moment or Muon momentum; "opt.v.<name>": Adam second
// moment), and metadata: "format" = "nanotrain-checkpoint", "model" (the model config), "train"
// (the flags as given), "state" (step, training time used, optimizer step count, loader
// position, schedule and bookkeeping), and "checksum" = sha256 over every byte of the file with
// the checksum's own 64 hex digits read as zeros. Files are written atomically; a checkpoint
// whose checksum does not match is never used.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/params.h"
#include "model/safetensors.h"
#include "train/train_state.h"

namespace nt {

struct CheckpointData {
  std::string path;
  ModelConfig model;
  nlohmann::json train;  // TrainConfig::to_json()
  TrainState state;
  StFile file;
};

std::string checkpoint_path(const std::string& run_dir, int64_t step);

// m: Adam moment / Muon momentum, v: Adam second moment, both in the parameters' arena layout.
void write_checkpoint(const std::string& path, const ModelConfig& model, const nlohmann::json& train,
                      const TrainState& state, const ParamArena& params, const float* m, const float* v);

// Verifies the checksum and the structure; throws nt::Error naming the file on any problem.
CheckpointData read_checkpoint(const std::string& path);
// The same from the file's bytes in memory; `name` is used in messages.
CheckpointData parse_checkpoint(const uint8_t* bytes, size_t size, const std::string& name);

// The checksum the file's bytes should carry (64 hex digits), and where its digits sit; empty
// and npos when the bytes are not a checkpoint with a checksum field. Lets tools and tests make
// deliberately odd but correctly checksummed checkpoints.
std::string checkpoint_checksum(const uint8_t* bytes, size_t size, size_t* digits_offset = nullptr);

// Copies the tensors into params / m / v; shapes must match the model (errors name the file).
void restore_checkpoint(const CheckpointData& ck, ParamArena& params, float* m, float* v);

// Checkpoint files of a run, newest (highest step) first.
std::vector<std::string> list_checkpoints(const std::string& run_dir);

// The newest checkpoint that verifies; invalid ones are reported through `warn` and skipped.
// Throws nt::Error when there is none.
CheckpointData newest_valid_checkpoint(const std::string& run_dir, void (*warn)(const std::string&));

// Deletes all but the newest `keep` checkpoints (and any stale temporary files).
void prune_checkpoints(const std::string& run_dir, int keep);

}  // namespace nt
