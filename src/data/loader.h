// SPDX-License-Identifier: MIT
// Batches of (inputs, targets) for training and evaluation.
//
// TrainLoader streams the concatenated training shards in windows of T+1 tokens; window w of
// rank r is global window (step * B + b) * world + r, starting at a seed-derived offset and
// wrapping around for further epochs. Its whole position is one counter (state()), so a resumed
// run continues on exactly the next batch. Targets of -1 are ignored by the loss.
//
// ValLoader walks the validation shards once, in windows that overlap by one token, so every
// token after the first is a target exactly once; the same batches every time.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/shard_format.h"

namespace nt {

// Concatenation of shards as one token sequence (no copies).
class TokenStream {
 public:
  explicit TokenStream(const std::vector<std::unique_ptr<Shard>>& shards);
  uint64_t size() const { return total_; }
  uint32_t at(uint64_t i) const;

 private:
  std::vector<const Shard*> shards_;
  std::vector<uint64_t> starts_;
  uint64_t total_ = 0;
};

class TrainLoader {
 public:
  TrainLoader(const std::vector<std::unique_ptr<Shard>>& shards, int batch, int seq, uint64_t seed,
              int rank = 0, int world = 1);
  // inputs, targets: (B, T) row-major.
  void next(int32_t* inputs, int32_t* targets);
  nlohmann::json state() const;
  void set_state(const nlohmann::json& s);
  uint64_t tokens_per_epoch() const { return stream_.size(); }

 private:
  TokenStream stream_;
  int B_, T_, rank_, world_;
  uint64_t offset_, windows_;
  uint64_t batches_done_ = 0;
};

class ValLoader {
 public:
  ValLoader(const std::vector<std::unique_ptr<Shard>>& shards, int batch, int seq,
            uint64_t max_targets = 0);
  size_t num_batches() const { return num_batches_; }
  // Fills batch i; returns the number of valid targets in it.
  uint64_t batch(size_t i, int32_t* inputs, int32_t* targets) const;
  uint64_t num_targets() const { return targets_; }

 private:
  TokenStream stream_;
  int B_, T_;
  uint64_t targets_;
  size_t num_batches_;
};

}  // namespace nt
