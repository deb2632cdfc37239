// SPDX-License-Identifier: MIT
#include "data/loader.h"

#include <algorithm>

#include "core/check.h"
#include "core/rng.h"

namespace nt {

TokenStream::TokenStream(const std::vector<std::unique_ptr<Shard>>& shards) {
  for (const auto& s : shards) {
    shards_.push_back(s.get());
    starts_.push_back(total_);
    total_ += s->size();
  }
}

uint32_t TokenStream::at(uint64_t i) const {
  NT_DCHECK(i < total_, "token index out of range");
  size_t k = size_t(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) - 1;
  return shards_[k]->token(i - starts_[k]);
}

TrainLoader::TrainLoader(const std::vector<std::unique_ptr<Shard>>& shards, int batch, int seq,
                         uint64_t seed, int rank, int world)
    : stream_(shards), B_(batch), T_(seq), rank_(rank), world_(world) {
  NT_CHECK(batch > 0 && seq > 0 && world > 0 && rank >= 0 && rank < world, "bad loader shape");
  if (stream_.size() < uint64_t(seq) + 1)
    fail("training data has %llu tokens, fewer than one sequence of %d+1", (unsigned long long)stream_.size(), seq);
  windows_ = (stream_.size() - 1) / uint64_t(seq);
  Rng rng(seed ^ 0x6c6f61646572ULL);
  offset_ = rng.below(windows_);
}

void TrainLoader::next(int32_t* inputs, int32_t* targets) {
  for (int b = 0; b < B_; ++b) {
    const uint64_t w = ((batches_done_ * uint64_t(B_) + uint64_t(b)) * uint64_t(world_) + uint64_t(rank_) + offset_) % windows_;
    const uint64_t start = w * uint64_t(T_);
    for (int t = 0; t < T_; ++t) {
      inputs[size_t(b) * T_ + t] = int32_t(stream_.at(start + t));
      targets[size_t(b) * T_ + t] = int32_t(stream_.at(start + t + 1));
    }
  }
  ++batches_done_;
}

nlohmann::json TrainLoader::state() const {
  return {{"kind", "stream"}, {"batches_done", batches_done_}, {"offset", offset_}};
}

void TrainLoader::set_state(const nlohmann::json& s) {
  if (s.value("kind", "") != "stream") fail("loader state: expected kind 'stream'");
  batches_done_ = s.at("batches_done").get<uint64_t>();
  offset_ = s.at("offset").get<uint64_t>();
  if (offset_ >= windows_) fail("loader state: offset out of range for this data");
}

ValLoader::ValLoader(const std::vector<std::unique_ptr<Shard>>& shards, int batch, int seq,
                     uint64_t max_targets)
    : stream_(shards), B_(batch), T_(seq) {
  targets_ = stream_.size() > 0 ? stream_.size() - 1 : 0;
  if (max_targets > 0) targets_ = std::min(targets_, max_targets);
  if (targets_ == 0) fail("validation data has fewer than 2 tokens");
  const uint64_t rows = (targets_ + uint64_t(seq) - 1) / uint64_t(seq);
  num_batches_ = size_t((rows + uint64_t(batch) - 1) / uint64_t(batch));
}

uint64_t ValLoader::batch(size_t i, int32_t* inputs, int32_t* targets) const {
  uint64_t valid = 0;
  for (int b = 0; b < B_; ++b) {
    const uint64_t row = uint64_t(i) * uint64_t(B_) + uint64_t(b);
    for (int t = 0; t < T_; ++t) {
      const uint64_t pos = row * uint64_t(T_) + uint64_t(t);  // target index: predicts token pos+1
      const size_t o = size_t(b) * T_ + t;
      if (pos < targets_) {
        inputs[o] = int32_t(stream_.at(pos));
        targets[o] = int32_t(stream_.at(pos + 1));
        ++valid;
      } else {
        inputs[o] = 0;
        targets[o] = -1;
      }
    }
  }
  return valid;
}

}  // namespace nt
