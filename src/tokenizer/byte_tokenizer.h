// SPDX-License-Identifier: MIT
// The byte tokenizer: ids 0..255 are the bytes, 256 is <|bos|>. Vocabulary 257.
#pragma once
#include "tokenizer/tokenizer.h"

namespace nt {

class ByteTokenizer final : public Tokenizer {
 public:
  ByteTokenizer();
  std::string kind() const override { return "bytes"; }
  uint32_t vocab_size() const override { return 257; }
  uint32_t bos_id() const override { return 256; }
  void encode(std::string_view text, std::vector<uint32_t>& out) const override;
  std::string decode(std::span<const uint32_t> ids) const override;
  uint32_t token_bytes(uint32_t id) const override { return id < 256 ? 1 : 0; }
  const Digest& identity() const override { return identity_; }
  std::string save_to_dir(const std::string& dir) const override { return "bytes"; }

 private:
  Digest identity_;
};

}  // namespace nt
