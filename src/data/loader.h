// SPDX-License-Identifier: MIT
// Batches of (inputs, targets) for training and evaluation.
//
// TrainLoader, PackMode::BestFit (the default): nanochat's BOS-aligned best-fit packing. Every
// row of T+1 tokens starts with BOS and is filled with whole documents: from a buffer of
// upcoming documents, repeatedly the largest one that still fits; when none fits, the shortest
// one is cropped to fill the row exactly (its rest is dropped). No padding, every target is
// trained on. A document longer than a row is first cut into row-sized pieces, each starting with
// BOS (the document's own, then a BOS put in front of each further piece), so that the tail of a
// long document is trained on rather than cropped away. Order: all pieces are shuffled per epoch
// (seed, epoch); rank r of world w takes every w-th piece of that order (disjoint shares); the
// buffer refills from the epoch's share and the next epoch begins when it has drained. The
// exact position (epoch, cursor, buffered pieces) is in state(), so a resumed run continues on
// exactly the next batch.
//
// TrainLoader, PackMode::Stream: the concatenated shards in windows of T+1 tokens; window w of
// rank r is global window (step * B + b) * world + r, from a seed-derived offset, wrapping around
// for further epochs. Rows need not start with BOS.
//
// ValLoader walks the validation shards once, in windows that overlap by one token, so every
// token after the first is a target exactly once; the same batches every time. Targets of -1 are
// ignored by the loss.
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

enum class PackMode { BestFit, Stream };

class TrainLoader {
 public:
  TrainLoader(const std::vector<std::unique_ptr<Shard>>& shards, int batch, int seq, uint64_t seed, int rank = 0,
              int world = 1, PackMode mode = PackMode::BestFit, int buffer_docs = 1000);
  // inputs, targets: (B, T) row-major.
  void next(int32_t* inputs, int32_t* targets);
  nlohmann::json state() const;
  void set_state(const nlohmann::json& s);
  uint64_t tokens_per_epoch() const { return stream_.size(); }
  PackMode mode() const { return mode_; }
  // Best-fit statistics since construction / set_state: tokens dropped by cropping, epoch.
  uint64_t cropped_tokens() const { return cropped_; }
  uint64_t epoch() const { return epoch_; }

 private:
  struct Piece {
    uint32_t shard;
    uint32_t len;   // real tokens taken from the shard
    uint64_t off;   // first real token in the shard
    bool extra_bos; // a BOS is put before the real tokens
    uint32_t size() const { return len + (extra_bos ? 1 : 0); }
  };
  void build_pieces();
  void shuffle_epoch();
  void fill_row(int32_t* row);  // T+1 tokens
  void next_stream(int32_t* inputs, int32_t* targets);

  std::vector<const Shard*> shards_;
  TokenStream stream_;
  int B_, T_, rank_, world_;
  PackMode mode_;
  uint64_t seed_;
  // Stream mode.
  uint64_t offset_ = 0, windows_ = 0, batches_done_ = 0;
  // Best-fit mode.
  size_t buffer_docs_;
  std::vector<Piece> pieces_;
  std::vector<uint32_t> share_;   // this rank's pieces in this epoch's order
  std::vector<uint32_t> buffer_;  // buffered piece ids, in arrival order
  uint64_t epoch_ = 0, cursor_ = 0, rows_done_ = 0, cropped_ = 0;
  uint32_t bos_ = 0;
  std::vector<int32_t> row_;
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
