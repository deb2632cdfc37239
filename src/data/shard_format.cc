// SPDX-License-Identifier: MIT
#include "data/shard_format.h"

#include <cstring>

#include "core/check.h"

namespace nt {

namespace {
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

constexpr size_t kChecksumOffset = 80;

Digest shard_checksum(const uint8_t* header, const uint8_t* payload, size_t n) {
  Sha256 h;
  h.update(header, kChecksumOffset);
  h.update(payload, n);
  return h.finish();
}

// The offset of the first token id >= vocab, or count if there is none.
template <class T>
uint64_t first_out_of_vocab(const uint8_t* payload, uint64_t count, uint32_t vocab) {
  const T* t = reinterpret_cast<const T*>(payload);
  uint64_t i = 0;
  for (; i < count; ++i)
    if (uint32_t(t[i]) >= vocab) break;
  return i;
}
}  // namespace

ShardWriter::ShardWriter(std::string path, uint32_t vocab_size, uint32_t bos_id,
                         const Digest& tokenizer_id)
    : path_(std::move(path)) {
  header_.vocab_size = vocab_size;
  header_.bos_id = bos_id;
  header_.token_width = vocab_size <= 65536 ? 2 : 4;
  header_.tokenizer_id = tokenizer_id;
}

void ShardWriter::add_document(std::span<const uint32_t> tokens) {
  const size_t w = header_.token_width;
  size_t at = payload_.size();
  payload_.resize(at + (tokens.size() + 1) * w);
  auto put = [&](uint32_t t) {
    NT_CHECK(t < header_.vocab_size, "token %u out of vocabulary %u", t, header_.vocab_size);
    if (w == 2) {
      uint16_t v = uint16_t(t);
      std::memcpy(&payload_[at], &v, 2);
    } else {
      std::memcpy(&payload_[at], &t, 4);
    }
    at += w;
  };
  put(header_.bos_id);
  for (uint32_t t : tokens) put(t);
  header_.token_count += tokens.size() + 1;
  header_.doc_count += 1;
}

void ShardWriter::finish() {
  uint8_t h[kShardHeaderBytes] = {};
  std::memcpy(h, kShardMagic, 8);
  put_u32(h + 8, kShardVersion);
  put_u32(h + 12, kShardHeaderBytes);
  put_u32(h + 16, header_.token_width);
  put_u32(h + 20, header_.vocab_size);
  put_u32(h + 24, header_.bos_id);
  put_u64(h + 32, header_.token_count);
  put_u64(h + 40, header_.doc_count);
  std::memcpy(h + 48, header_.tokenizer_id.data(), 32);
  header_.checksum = shard_checksum(h, payload_.data(), payload_.size());
  std::memcpy(h + 80, header_.checksum.data(), 32);
  AtomicFile f(path_);
  f.write(h, sizeof h);
  f.write(payload_.data(), payload_.size());
  f.commit();
}

ShardHeader parse_shard_header(const uint8_t* data, size_t size, const std::string& path) {
  const char* p = path.c_str();
  if (size < kShardHeaderBytes) fail("%s: not a token shard (file is %zu bytes, shorter than the header)", p, size);
  if (std::memcmp(data, kShardMagic, 8) != 0) fail("%s: not a token shard (bad magic)", p);
  uint32_t version = get_u32(data + 8);
  if (version != kShardVersion)
    fail("%s: shard format version %u is not supported (expected %u); re-run `nanotrain data prepare`", p, version, kShardVersion);
  if (get_u32(data + 12) != kShardHeaderBytes) fail("%s: corrupt shard header (header size)", p);
  ShardHeader h;
  h.token_width = get_u32(data + 16);
  h.vocab_size = get_u32(data + 20);
  h.bos_id = get_u32(data + 24);
  h.token_count = get_u64(data + 32);
  h.doc_count = get_u64(data + 40);
  std::memcpy(h.tokenizer_id.data(), data + 48, 32);
  std::memcpy(h.checksum.data(), data + kChecksumOffset, 32);
  if (h.token_width != 2 && h.token_width != 4) fail("%s: corrupt shard header (token width %u)", p, h.token_width);
  if (h.vocab_size == 0 || h.bos_id >= h.vocab_size) fail("%s: corrupt shard header (vocab %u, bos %u)", p, h.vocab_size, h.bos_id);
  if (h.token_width == 2 && h.vocab_size > 65536) fail("%s: corrupt shard header (vocab %u needs 4-byte tokens)", p, h.vocab_size);
  const uint64_t max_tokens = (uint64_t(1) << 62) / h.token_width;
  if (h.token_count > max_tokens || kShardHeaderBytes + h.token_count * h.token_width != size)
    fail("%s: truncated or corrupt shard (header says %llu tokens of %u bytes, file has %zu payload bytes)", p,
         (unsigned long long)h.token_count, h.token_width, size - kShardHeaderBytes);
  if (h.doc_count > h.token_count) fail("%s: corrupt shard header (more documents than tokens)", p);
  return h;
}

Shard::Shard(const std::string& path, const ShardExpect* expect) : file_(path) {
  const char* p = path.c_str();
  header_ = parse_shard_header(file_.data(), file_.size(), path);
  payload_ = file_.data() + kShardHeaderBytes;
  const uint64_t n = header_.token_count;
  if (shard_checksum(file_.data(), payload_, size_t(n) * header_.token_width) != header_.checksum)
    fail("%s: corrupt shard (checksum mismatch)", p);
  if (expect) {
    if (expect->tokenizer_id != header_.tokenizer_id)
      fail("%s: shard was made with another tokenizer (id %.12s…, expected %.12s…); re-run `nanotrain data prepare` "
           "with this tokenizer",
           p, to_hex(header_.tokenizer_id).c_str(), to_hex(expect->tokenizer_id).c_str());
    if (expect->vocab_size != header_.vocab_size || expect->bos_id != header_.bos_id)
      fail("%s: shard has vocabulary %u and BOS %u, its tokenizer %u and %u", p, header_.vocab_size, header_.bos_id,
           expect->vocab_size, expect->bos_id);
  }
  const uint64_t bad = header_.token_width == 2 ? first_out_of_vocab<uint16_t>(payload_, n, header_.vocab_size)
                                                : first_out_of_vocab<uint32_t>(payload_, n, header_.vocab_size);
  if (bad < n)
    fail("%s: token %llu (byte offset %llu) is id %u, outside the vocabulary of %u", p, (unsigned long long)bad,
         (unsigned long long)(kShardHeaderBytes + bad * header_.token_width), token(bad), header_.vocab_size);
}

}  // namespace nt
