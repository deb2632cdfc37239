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
                         uint64_t seed, int rank, int world, PackMode mode, int buffer_docs)
    : stream_(shards), B_(batch), T_(seq), rank_(rank), world_(world), mode_(mode), seed_(seed),
      buffer_docs_(size_t(buffer_docs > 0 ? buffer_docs : 1)) {
  NT_CHECK(batch > 0 && seq > 0 && world > 0 && rank >= 0 && rank < world, "bad loader shape");
  for (const auto& s : shards) shards_.push_back(s.get());
  if (stream_.size() < uint64_t(seq) + 1)
    fail("training data has %llu tokens, fewer than one sequence of %d+1", (unsigned long long)stream_.size(), seq);
  if (mode_ == PackMode::Stream) {
    windows_ = (stream_.size() - 1) / uint64_t(seq);
    Rng rng(seed ^ 0x6c6f61646572ULL);
    offset_ = rng.below(windows_);
    return;
  }
  bos_ = shards_.front()->header().bos_id;
  build_pieces();
  if (pieces_.size() < size_t(world_))
    fail("training data has %zu documents (pieces), fewer than the %d ranks", pieces_.size(), world_);
  row_.resize(size_t(T_) + 1);
  shuffle_epoch();
}

void TrainLoader::build_pieces() {
  const uint64_t L = uint64_t(T_) + 1;
  for (uint32_t k = 0; k < shards_.size(); ++k) {
    const Shard& s = *shards_[k];
    const uint64_t n = s.size();
    uint64_t i = 0;
    while (i < n) {
      uint64_t j = i + 1;
      while (j < n && s.token(j) != bos_) ++j;
      // Document [i, j): the first piece keeps the document's own BOS; further pieces get one.
      const bool own_bos = s.token(i) == bos_;
      bool first = true;
      for (uint64_t at = i; at < j; first = false) {
        const bool extra = !(first && own_bos);
        const uint64_t len = std::min(extra ? L - 1 : L, j - at);
        pieces_.push_back({k, uint32_t(len), at, extra});
        at += len;
      }
      i = j;
    }
  }
}

void TrainLoader::shuffle_epoch() {
  std::vector<uint32_t> order(pieces_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  Rng rng(seed_ * 0x9E3779B97F4A7C15ULL ^ (epoch_ + 1) * 0xBF58476D1CE4E5B9ULL ^ 0x7061636bULL);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  share_.clear();
  for (size_t i = size_t(rank_); i < order.size(); i += size_t(world_)) share_.push_back(order[i]);
}

void TrainLoader::fill_row(int32_t* row) {
  const uint32_t cap = uint32_t(T_) + 1;
  uint32_t pos = 0;
  while (pos < cap) {
    // Refill from this epoch's share; the next epoch starts only once the buffer is empty, so
    // that within an epoch the ranks' documents stay disjoint.
    while (buffer_.size() < buffer_docs_ && cursor_ < share_.size()) buffer_.push_back(share_[cursor_++]);
    if (buffer_.empty()) {
      ++epoch_;
      cursor_ = 0;
      shuffle_epoch();
      continue;
    }
    const uint32_t room = cap - pos;
    size_t best = buffer_.size(), shortest = 0;
    uint32_t best_len = 0;
    for (size_t i = 0; i < buffer_.size(); ++i) {
      const uint32_t len = pieces_[buffer_[i]].size();
      if (len <= room && len > best_len) best = i, best_len = len;
      if (len < pieces_[buffer_[shortest]].size()) shortest = i;
    }
    const size_t pick = best < buffer_.size() ? best : shortest;
    const Piece& p = pieces_[buffer_[pick]];
    buffer_.erase(buffer_.begin() + std::ptrdiff_t(pick));
    const Shard& s = *shards_[p.shard];
    uint32_t n = std::min(p.size(), room);
    if (p.size() > room) cropped_ += p.size() - room;
    uint32_t k = 0;
    if (p.extra_bos) row[pos + k++] = int32_t(bos_);
    for (uint64_t t = p.off; k < n; ++k, ++t) row[pos + k] = int32_t(s.token(t));
    pos += n;
  }
}

void TrainLoader::next(int32_t* inputs, int32_t* targets) {
  if (mode_ == PackMode::Stream) return next_stream(inputs, targets);
  for (int b = 0; b < B_; ++b) {
    fill_row(row_.data());
    std::copy(row_.begin(), row_.end() - 1, inputs + size_t(b) * size_t(T_));
    std::copy(row_.begin() + 1, row_.end(), targets + size_t(b) * size_t(T_));
    ++rows_done_;
  }
  ++batches_done_;
}

void TrainLoader::next_stream(int32_t* inputs, int32_t* targets) {
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
  if (mode_ == PackMode::Stream) return {{"kind", "stream"}, {"batches_done", batches_done_}, {"offset", offset_}};
  return {{"kind", "bestfit"}, {"seq", T_}, {"rank", rank_}, {"world", world_}, {"seed", seed_},
          {"pieces", pieces_.size()}, {"tokens", stream_.size()}, {"epoch", epoch_}, {"cursor", cursor_},
          {"batches_done", batches_done_}, {"rows_done", rows_done_}, {"buffer", buffer_}};
}

void TrainLoader::set_state(const nlohmann::json& s) {
  try {
    const std::string kind = s.value("kind", "");
    if (mode_ == PackMode::Stream) {
      if (kind != "stream") fail("loader state: kind '%s', this loader streams (kind 'stream')", kind.c_str());
      batches_done_ = s.at("batches_done").get<uint64_t>();
      offset_ = s.at("offset").get<uint64_t>();
      if (offset_ >= windows_) fail("loader state: offset out of range for this data");
      return;
    }
    if (kind != "bestfit") fail("loader state: kind '%s', this loader packs documents (kind 'bestfit')", kind.c_str());
    if (s.at("seq").get<int>() != T_ || s.at("rank").get<int>() != rank_ || s.at("world").get<int>() != world_ ||
        s.at("seed").get<uint64_t>() != seed_)
      fail("loader state: saved for another sequence length, rank, world size or seed");
    if (s.at("pieces").get<size_t>() != pieces_.size() || s.at("tokens").get<uint64_t>() != stream_.size())
      fail("loader state: saved for other training data (%zu pieces, %llu tokens here)", pieces_.size(),
           (unsigned long long)stream_.size());
    const uint64_t epoch = s.at("epoch").get<uint64_t>();
    auto buffer = s.at("buffer").get<std::vector<uint32_t>>();
    for (uint32_t id : buffer)
      if (id >= pieces_.size()) fail("loader state: buffered piece %u out of range", id);
    epoch_ = epoch;
    shuffle_epoch();
    cursor_ = s.at("cursor").get<uint64_t>();
    if (cursor_ > share_.size()) fail("loader state: cursor out of range");
    buffer_ = std::move(buffer);
    batches_done_ = s.at("batches_done").get<uint64_t>();
    rows_done_ = s.at("rows_done").get<uint64_t>();
    cropped_ = 0;
  } catch (const nlohmann::json::exception& e) {
    fail("loader state: malformed: %s", e.what());
  }
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
