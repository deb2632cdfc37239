// SPDX-License-Identifier: MIT
// TrainLoader (best-fit packing and streaming) and ValLoader.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/check.h"
#include "core/rng.h"
#include "data/loader.h"
#include "data/shard_format.h"

namespace nt {
namespace {

namespace fs = std::filesystem;
constexpr uint32_t kVocab = 1u << 20, kBos = kVocab - 1;

// Documents of varied lengths whose tokens encode (doc id, position): token = 1 + doc * 1000 +
// pos, so that rows reveal which document and offset they came from.
struct Fixture {
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<std::vector<uint32_t>> docs;
  explicit Fixture(const std::string& name, int ndocs = 300, int nshards = 2) {
    const fs::path dir = fs::path(NT_BINARY_DIR) / "test_tmp" / "loader" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    Rng rng(5);
    const Digest id = sha256(std::string_view("loader-test"));
    for (int s = 0; s < nshards; ++s) {
      const std::string p = (dir / ("train_" + std::to_string(s) + ".bin")).string();
      ShardWriter w(p, kVocab, kBos, id);
      for (int d = 0; d < ndocs / nshards; ++d) {
        const uint32_t len = uint32_t(1 + rng.below(rng.below(4) == 0 ? 700 : 120));
        std::vector<uint32_t> doc;
        const uint32_t di = uint32_t(docs.size());
        for (uint32_t k = 0; k < len; ++k) doc.push_back(1 + di * 1000 + k);
        w.add_document(doc);
        docs.push_back(doc);
      }
      w.finish();
      shards.push_back(std::make_unique<Shard>(p, nullptr));
    }
  }
};

std::vector<int32_t> batch(TrainLoader& l, int B, int T, std::vector<int32_t>* targets = nullptr) {
  std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
  l.next(in.data(), tg.data());
  if (targets) *targets = tg;
  return in;
}

TEST(BestFit, RowsStartWithBosAndTargetsShiftByOne) {
  Fixture f("bos");
  const int B = 4, T = 64;
  TrainLoader l(f.shards, B, T, 1);
  EXPECT_EQ(l.mode(), PackMode::BestFit);
  for (int step = 0; step < 50; ++step) {
    std::vector<int32_t> tg;
    auto in = batch(l, B, T, &tg);
    for (int b = 0; b < B; ++b) {
      EXPECT_EQ(in[size_t(b) * T], int32_t(kBos));
      for (int t = 0; t + 1 < T; ++t) EXPECT_EQ(tg[size_t(b) * T + t], in[size_t(b) * T + t + 1]);
      for (int t = 0; t < T; ++t) EXPECT_GE(tg[size_t(b) * T + t], 0);
    }
  }
}

TEST(BestFit, DeterministicAndResumable) {
  Fixture f("resume");
  const int B = 3, T = 32;
  TrainLoader a(f.shards, B, T, 7), b(f.shards, B, T, 7), c(f.shards, B, T, 8);
  bool differs = false;
  for (int i = 0; i < 20; ++i) {
    auto x = batch(a, B, T), y = batch(b, B, T), z = batch(c, B, T);
    EXPECT_EQ(x, y);
    differs |= x != z;
  }
  EXPECT_TRUE(differs) << "another seed should give other batches";
  // Save mid-way (across an epoch boundary), restore into a fresh loader, continue identically.
  for (int i = 0; i < 400; ++i) batch(a, B, T);
  const auto st = a.state();
  TrainLoader r(f.shards, B, T, 7);
  r.set_state(nlohmann::json::parse(st.dump()));
  for (int i = 0; i < 30; ++i) EXPECT_EQ(batch(a, B, T), batch(r, B, T)) << "batch " << i << " after resume";
  EXPECT_GT(a.epoch(), 0u);
  // State from another shape is refused.
  TrainLoader other(f.shards, B, T + 1, 7);
  EXPECT_THROW(other.set_state(st), Error);
}

// Within the first epoch two ranks see disjoint tokens, and together most of the data.
TEST(BestFit, RanksAreDisjointAndEpochCoversData) {
  Fixture f("ranks");
  const int B = 2, T = 128;
  std::set<int> seen[2];
  uint64_t total_tokens = 0;
  for (const auto& d : f.docs) total_tokens += d.size() + 1;
  for (int r = 0; r < 2; ++r) {
    TrainLoader l(f.shards, B, T, 3, r, 2);
    uint64_t rows = 0;
    while (l.epoch() == 0 && rows * (T + 1) < total_tokens) {
      std::vector<int32_t> tg;
      auto in = batch(l, B, T, &tg);
      rows += B;
      if (l.epoch() > 0) break;  // this batch reached into the next epoch
      for (int32_t t : in)
        if (uint32_t(t) != kBos) seen[r].insert(t);
    }
  }
  // Tokens identify (document, position): no token reaches both ranks, and most are seen.
  size_t both = 0;
  for (int t : seen[0]) both += seen[1].count(t);
  EXPECT_EQ(both, 0u);
  EXPECT_GT(double(seen[0].size() + seen[1].size()), 0.8 * double(total_tokens - f.docs.size()));
}

TEST(BestFit, LowWasteOnShortDocuments) {
  Fixture f("waste", 400, 1);
  const int B = 4, T = 256;
  TrainLoader l(f.shards, B, T, 1);
  uint64_t tokens = 0;
  for (int i = 0; i < 40; ++i) {
    batch(l, B, T);
    tokens += uint64_t(B) * (T + 1);
  }
  EXPECT_LT(double(l.cropped_tokens()) / double(tokens), 0.10);
}

TEST(Stream, StillAvailable) {
  Fixture f("stream");
  const int B = 2, T = 16;
  TrainLoader l(f.shards, B, T, 1, 0, 1, PackMode::Stream);
  std::vector<int32_t> tg;
  auto in = batch(l, B, T, &tg);
  for (int t = 0; t + 1 < T; ++t) EXPECT_EQ(tg[size_t(t)], in[size_t(t) + 1]);
  const auto st = l.state();
  EXPECT_EQ(st["kind"], "stream");
  TrainLoader r(f.shards, B, T, 1, 0, 1, PackMode::Stream);
  r.set_state(st);
  EXPECT_EQ(batch(l, B, T), batch(r, B, T));
}

// Every token after the first is a target exactly once, in order, as the concatenated shards have
// it (across the shard boundary too): the (input, target) pairs are the stream's neighbours.
// Checked to fail on purpose (tests/mutation/mutations.py): a target that is its own input keeps
// the count right and fails the pairs.
TEST(Val, EveryTokenAfterTheFirstIsATargetOnce) {
  Fixture f("val", 20, 2);
  std::vector<int32_t> stream;
  for (const auto& s : f.shards)
    for (uint64_t i = 0; i < s->size(); ++i) stream.push_back(int32_t(s->token(i)));
  for (int T : {50, 7, int(stream.size()) - 1, int(stream.size()) + 3}) {
    const int B = 3;
    ValLoader v(f.shards, B, T);
    std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
    size_t next = 0;  // the next target's index in the stream, minus 1
    uint64_t n = 0;
    for (size_t i = 0; i < v.num_batches(); ++i) {
      n += v.batch(i, in.data(), tg.data());
      for (size_t o = 0; o < in.size(); ++o) {
        if (tg[o] < 0) continue;
        ASSERT_LT(next + 1, stream.size()) << "T " << T;
        ASSERT_EQ(in[o], stream[next]) << "T " << T << " target " << next;
        ASSERT_EQ(tg[o], stream[next + 1]) << "T " << T << " target " << next;
        ++next;
      }
    }
    EXPECT_EQ(next, stream.size() - 1) << "T " << T;
    EXPECT_EQ(n, stream.size() - 1);
    EXPECT_EQ(n, v.num_targets());
  }
}

// --- best-fit packing invariants on awkward document sizes

// Shards of documents with the given lengths; token = 1 + doc * 1000 + position.
struct Docs {
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<uint32_t> len;  // per document, over all shards in order
  Docs(const std::string& name, const std::vector<std::vector<uint32_t>>& lens_per_shard) {
    const fs::path dir = fs::path(NT_BINARY_DIR) / "test_tmp" / "loader" / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const Digest id = sha256(std::string_view("loader-test"));
    for (size_t s = 0; s < lens_per_shard.size(); ++s) {
      const std::string p = (dir / ("train_" + std::to_string(s) + ".bin")).string();
      ShardWriter w(p, kVocab, kBos, id);
      for (uint32_t n : lens_per_shard[s]) {
        std::vector<uint32_t> doc;
        for (uint32_t k = 0; k < n; ++k) doc.push_back(1 + uint32_t(len.size()) * 1000 + k);
        w.add_document(doc);
        len.push_back(n);
      }
      w.finish();
      shards.push_back(std::make_unique<Shard>(p, nullptr));
    }
  }
  // The pieces a document of n tokens is cut into at sequence length T: its BOS and its first T
  // tokens, then T tokens at a time behind a BOS of their own.
  static uint32_t pieces(uint32_t n, int T) { return (n + uint32_t(T) - 1) / uint32_t(T); }
  size_t total_pieces(int T) const {
    size_t p = 0;
    for (uint32_t n : len) p += pieces(n, T);
    return p;
  }
};

// One span of a row: a BOS and the document tokens behind it (doc -1: the BOS alone).
struct Span {
  int doc = -1;
  uint32_t start = 0, real = 0;
  bool at_row_end = false;
};

// Splits a row of T+1 tokens at its BOSes and checks each span: contiguous positions of one
// document from a piece boundary (a multiple of T), and a whole piece unless it ends the row
// (only the row's last span may be cropped).
std::vector<Span> spans_of_row(const std::vector<int32_t>& row, int T, const Docs& d) {
  std::vector<Span> out;
  EXPECT_EQ(uint32_t(row[0]), kBos) << "a row must start with BOS";
  for (size_t i = 0; i < row.size(); ++i) {
    const uint32_t t = uint32_t(row[i]);
    if (t == kBos) {
      out.push_back({});
      continue;
    }
    Span& s = out.back();
    const int doc = int((t - 1) / 1000);
    const uint32_t pos = (t - 1) % 1000;
    if (s.real == 0) {
      s.doc = doc, s.start = pos;
      EXPECT_LT(size_t(doc), d.len.size());
      EXPECT_EQ(pos % uint32_t(T), 0u) << "a span starts inside a piece (doc " << doc << " at " << pos << ")";
    } else {
      EXPECT_EQ(doc, s.doc) << "a span crosses from one document to another without a BOS";
      EXPECT_EQ(pos, s.start + s.real) << "a span skips or repeats positions of doc " << doc;
    }
    ++s.real;
  }
  out.back().at_row_end = true;
  for (const Span& s : out) {
    if (s.at_row_end || s.doc < 0) continue;
    EXPECT_EQ(s.real, std::min<uint32_t>(uint32_t(T), d.len[size_t(s.doc)] - s.start))
        << "doc " << s.doc << " piece at " << s.start << " cropped before the row's end";
  }
  return out;
}

// Rows of one loader until its first epoch is over: the pieces it emitted in that epoch (a piece
// is (doc, start)) and the number of spans that were a BOS alone (a piece cropped to its BOS at a
// row's end). The epoch ends in the row where the loader's epoch() turns 1, after `share` spans
// (the rank's share of the pieces); no piece may appear twice before.
struct EpochPieces {
  std::set<std::pair<int, uint32_t>> pieces;
  size_t bos_only = 0;
};
EpochPieces first_epoch(TrainLoader& l, int T, const Docs& d, size_t share) {
  EpochPieces e;
  const bool failing_before = ::testing::Test::HasFailure();
  std::vector<int32_t> in(static_cast<size_t>(T)), tg(static_cast<size_t>(T)), row(size_t(T) + 1);
  for (int guard = 0; guard < 100000; ++guard) {
    l.next(in.data(), tg.data());
    std::copy(in.begin(), in.end(), row.begin());
    row[size_t(T)] = tg[size_t(T) - 1];
    const bool flip = l.epoch() > 0;
    const auto spans = spans_of_row(row, T, d);
    const size_t seen = e.pieces.size() + e.bos_only;
    if (seen + spans.size() > share && !flip) ADD_FAILURE() << "more than " << share << " pieces in one epoch";
    // In the row where the next epoch begins, at least its last span belongs to that epoch (all
    // of them when the epoch ended exactly at the previous row's end).
    if (flip && (seen > share || share - seen >= spans.size()))
      ADD_FAILURE() << "the epoch ended after " << seen << " + " << spans.size() << " spans, not " << share;
    for (size_t i = 0; i < spans.size() && e.pieces.size() + e.bos_only < share; ++i) {
      const Span& s = spans[i];
      if (s.doc < 0) {
        EXPECT_TRUE(s.at_row_end) << "a BOS alone inside a row";
        ++e.bos_only;
      } else {
        EXPECT_TRUE(e.pieces.insert({s.doc, s.start}).second)
            << "piece (doc " << s.doc << ", " << s.start << ") twice within one epoch";
      }
    }
    if (flip || (!failing_before && ::testing::Test::HasFailure())) return e;
  }
  ADD_FAILURE() << "the epoch never ended";
  return e;
}

// Awkward lengths around the sequence length T, single-token documents, a shard of one document,
// one longer than several rows.
std::vector<std::vector<uint32_t>> awkward_lengths(int T) {
  const uint32_t t = uint32_t(T);
  std::vector<std::vector<uint32_t>> shards = {{t}, {1, t - 1, t + 1, 2 * t, 2 * t + 1, 1, 1, 5 * t + 3}, {}};
  Rng rng{uint64_t(T)};
  for (int i = 0; i < 60; ++i) shards[2].push_back(uint32_t(1 + rng.below(3 * t)));
  shards.push_back({t - 1});
  return shards;
}

// Every piece of every document appears once in an epoch, whole unless the row ends in it,
// contiguous, from its piece boundary, behind a BOS, documents in the last shard included.
// Checked to fail on purpose (tests/mutation/mutations.py): further pieces of a long document
// cut one token short (L - 2 in build_pieces) fail it.
TEST(BestFit, EachPieceOncePerEpochWholeUnlessCroppedAtRowEnd) {
  for (int T : {7, 16, 33}) {
    Docs d("pieces_" + std::to_string(T), awkward_lengths(T));
    for (int buffer : {1, 4, 1000}) {
      TrainLoader l(d.shards, 1, T, 5, 0, 1, PackMode::BestFit, buffer);
      const EpochPieces e = first_epoch(l, T, d, d.total_pieces(T));
      // Every piece that is not in the set was cropped to a BOS alone.
      size_t missing = 0;
      for (size_t doc = 0; doc < d.len.size(); ++doc)
        for (uint32_t k = 0; k < Docs::pieces(d.len[doc], T); ++k)
          missing += e.pieces.count({int(doc), k * uint32_t(T)}) == 0;
      EXPECT_EQ(missing, e.bos_only) << "T " << T << " buffer " << buffer;
      EXPECT_EQ(e.pieces.size() + e.bos_only, d.total_pieces(T)) << "T " << T << " buffer " << buffer;
    }
  }
}

// Over three ranks, the first epochs' pieces are disjoint and together all of them.
// Checked to fail on purpose (tests/mutation/mutations.py): every rank taking the same share
// (i = 0 in shuffle_epoch's stride) fails it.
TEST(BestFit, RanksSharePiecesDisjointlyAndCompletely) {
  const int T = 9, world = 3;
  Docs d("ranks3", awkward_lengths(T));
  std::set<std::pair<int, uint32_t>> all;
  size_t count = 0;
  for (int r = 0; r < world; ++r) {
    TrainLoader l(d.shards, 1, T, 11, r, world, PackMode::BestFit, 8);
    const size_t share = (d.total_pieces(T) + size_t(world - 1 - r)) / size_t(world);
    const EpochPieces e = first_epoch(l, T, d, share);
    for (const auto& p : e.pieces) EXPECT_TRUE(all.insert(p).second) << "rank " << r << " repeats another's piece";
    count += e.pieces.size() + e.bos_only;
  }
  EXPECT_EQ(count, d.total_pieces(T));
}

}  // namespace
}  // namespace nt
