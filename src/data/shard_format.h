// SPDX-License-Identifier: MIT
// Token shard files (see docs/FORMATS.md).
//
// A shard is a 128-byte little-endian header followed by token_count tokens of token_width
// bytes (uint16 when the vocabulary fits, uint32 otherwise). Every document starts with BOS.
//
//   off size field
//     0    8 magic "NTSHARD\0"
//     8    4 format_version (2)
//    12    4 header_bytes (128)
//    16    4 token_width (2 or 4)
//    20    4 vocab_size
//    24    4 bos_id
//    28    4 reserved (0)
//    32    8 token_count
//    40    8 doc_count
//    48   32 tokenizer identity (sha256)
//    80   32 sha256 of header bytes 0..79 followed by the payload: the header's vocabulary, BOS id,
//             counts and tokenizer identity are covered as well as the tokens
//   112   16 reserved (0)
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/sha256.h"

namespace nt {

inline constexpr char kShardMagic[8] = {'N', 'T', 'S', 'H', 'A', 'R', 'D', '\0'};
inline constexpr uint32_t kShardVersion = 2;
inline constexpr uint32_t kShardHeaderBytes = 128;

struct ShardHeader {
  uint32_t token_width = 2;
  uint32_t vocab_size = 0;
  uint32_t bos_id = 0;
  uint64_t token_count = 0;
  uint64_t doc_count = 0;
  Digest tokenizer_id{};
  Digest checksum{};  // over header bytes 0..79 and the payload
};

// What the reader of a shard expects of it: the tokenizer it was made with.
struct ShardExpect {
  Digest tokenizer_id{};
  uint32_t vocab_size = 0, bos_id = 0;
};

// Streams tokens into a shard; the header (with counts and checksum) is written at finish()
// and the file appears atomically under its final name.
class ShardWriter {
 public:
  ShardWriter(std::string path, uint32_t vocab_size, uint32_t bos_id, const Digest& tokenizer_id);
  // Appends one document: BOS, then its tokens.
  void add_document(std::span<const uint32_t> tokens);
  uint64_t token_count() const { return header_.token_count; }
  void finish();

 private:
  std::string path_;
  ShardHeader header_;
  std::vector<uint8_t> payload_;
};

// A validated, memory-mapped shard. Construction checks magic, version, header size, token
// width, file size against token_count, the checksum, and that every token id is inside the
// vocabulary; errors name the file (and, for a bad id, its offset).
class Shard {
 public:
  // If expect is non-null, a shard made with another tokenizer (identity, vocabulary or BOS id)
  // is an error.
  Shard(const std::string& path, const ShardExpect* expect);
  const ShardHeader& header() const { return header_; }
  uint64_t size() const { return header_.token_count; }
  uint32_t token(uint64_t i) const {
    return header_.token_width == 2 ? uint32_t(reinterpret_cast<const uint16_t*>(payload_)[i])
                                    : reinterpret_cast<const uint32_t*>(payload_)[i];
  }
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  ShardHeader header_;
  const uint8_t* payload_ = nullptr;
};

ShardHeader parse_shard_header(const uint8_t* data, size_t size, const std::string& path);

}  // namespace nt
