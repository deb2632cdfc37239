// SPDX-License-Identifier: MIT
// The tokenizer interface every data path and the sampler use.
//
// Ids are uint32. Ordinary text never produces a special token; BOS is inserted by the data
// preparation before every document. token_bytes(id) is the number of UTF-8 bytes the token
// stands for (0 for special tokens): val_bpb divides nats by these bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/sha256.h"

namespace nt {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // "bytes" or "bpe".
  virtual std::string kind() const = 0;
  virtual uint32_t vocab_size() const = 0;
  virtual uint32_t bos_id() const = 0;
  // Appends the ids of ordinary text (no special tokens are recognised in it).
  virtual void encode(std::string_view text, std::vector<uint32_t>& out) const = 0;
  // Concatenated bytes of the ids; special tokens decode to their names.
  virtual std::string decode(std::span<const uint32_t> ids) const = 0;
  virtual uint32_t token_bytes(uint32_t id) const = 0;
  // Content hash recorded in every shard and checkpoint; mismatches are errors.
  virtual const Digest& identity() const = 0;
  // Writes the files needed to load this tokenizer again into dir; returns the spec to pass to
  // load_tokenizer (relative to dir), e.g. "bytes" or "tokenizer.tiktoken".
  virtual std::string save_to_dir(const std::string& dir) const = 0;
};

// spec: "bytes", or a path to a tokenizer file. Throws nt::Error naming the file on failure.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);
// Resolves a spec stored in a directory (run folder or data folder).
std::unique_ptr<Tokenizer> load_tokenizer_in_dir(const std::string& dir, const std::string& spec);

}  // namespace nt
