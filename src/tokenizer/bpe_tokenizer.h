// SPDX-License-Identifier: MIT
// Byte-level BPE in tiktoken's model: a pre-tokenisation regex cuts text into pieces; each piece
// (as bytes) becomes one token if it is in the vocabulary, otherwise its bytes are merged
// pair-by-pair, always the adjacent pair whose concatenation has the lowest rank (leftmost on
// ties), exactly as tiktoken's `byte_pair_encode`. Token id == rank for ordinary tokens; special
// tokens have their own ids and never come out of encode().
//
// Files (see docs/FORMATS.md):
//  * NAME.tiktoken: one "BASE64(token bytes) RANK" line per ordinary token (tiktoken's format);
//  * NAME.tiktoken.json: the sidecar with the pattern, the special tokens and the BOS token.
//  * tiktoken's own encoder files (npm package `tiktoken`, encoders/*.json) load too.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace nt {

// The special tokens nanochat reserves, in id order after the ordinary tokens; the first is BOS.
inline const std::vector<std::string>& nanochat_special_tokens() {
  static const std::vector<std::string> v = {
      "<|bos|>",          "<|user_start|>",   "<|user_end|>",
      "<|assistant_start|>", "<|assistant_end|>", "<|python_start|>",
      "<|python_end|>",   "<|output_start|>", "<|output_end|>"};
  return v;
}

class BpeTokenizer final : public Tokenizer {
 public:
  // ranks[i] are the bytes of ordinary token i ("" marks an unused id); all 256 single bytes must
  // be present. specials: (name, id). vocab_size 0 means max id + 1. Throws nt::Error on
  // inconsistent input (duplicate token or id, missing byte, unknown BOS); `where` names the
  // source in messages.
  BpeTokenizer(std::string name, std::string pattern, std::vector<std::string> ranks,
               std::vector<std::pair<std::string, uint32_t>> specials, std::string bos,
               uint32_t vocab_size, const std::string& where);
  ~BpeTokenizer() override;

  // A .tiktoken file (with its sidecar FILE.json) or a tiktoken encoder JSON
  // ({"pat_str", "special_tokens", "bpe_ranks"}). Errors name the file (and line).
  static std::unique_ptr<BpeTokenizer> load(const std::string& path);
  // The same from memory: a .tiktoken file's text and its sidecar's text, or a tiktoken encoder
  // JSON's text; `path` names the source in messages (nothing is read from disk).
  static std::unique_ptr<BpeTokenizer> from_tiktoken(const std::string& text, const std::string& sidecar,
                                                     const std::string& path);
  static std::unique_ptr<BpeTokenizer> from_encoder_json(const std::string& json_text, const std::string& path);
  // Writes PATH (.tiktoken) and PATH.json atomically.
  void save(const std::string& tiktoken_path) const;
  // The .tiktoken text (sorted by rank) and the sidecar JSON text, as saved.
  std::string tiktoken_text() const;
  std::string sidecar_text() const;

  std::string kind() const override { return "bpe"; }
  uint32_t vocab_size() const override { return vocab_size_; }
  uint32_t bos_id() const override { return bos_id_; }
  void encode(std::string_view text, std::vector<uint32_t>& out) const override;
  std::string decode(std::span<const uint32_t> ids) const override;
  uint32_t token_bytes(uint32_t id) const override;
  const Digest& identity() const override { return identity_; }
  std::string save_to_dir(const std::string& dir) const override;

  const std::string& name() const { return name_; }
  const PreTokenizer& pretokenizer() const { return *pre_; }
  const std::string& bos_name() const { return bos_name_; }
  const std::vector<std::pair<std::string, uint32_t>>& specials() const { return specials_; }
  // Number of ids holding ordinary tokens (including unused ids below the last one).
  uint32_t num_ranks() const { return uint32_t(tok_len_.size()); }
  std::string_view token(uint32_t id) const;  // ordinary token bytes, or "" for specials/unused
  // Rank of exactly these bytes, or kNoRank.
  static constexpr uint32_t kNoRank = 0xFFFFFFFFu;
  uint32_t rank_of(std::string_view bytes) const;
  // Encodes one piece (already split by the pattern) by byte-pair merging.
  void encode_piece(std::string_view piece, std::vector<uint32_t>& out) const;

 private:
  uint32_t lookup(const uint8_t* p, size_t n) const;
  void merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const;

  std::string name_, bos_name_;
  std::unique_ptr<PreTokenizer> pre_;
  std::string arena_;                   // all ordinary token bytes
  std::vector<uint32_t> tok_off_, tok_len_;  // per id
  std::vector<uint32_t> slots_;         // open-addressing table of ids
  std::vector<uint32_t> slot_tag_;
  uint64_t mask_ = 0;
  uint32_t byte_rank_[256];
  std::vector<std::pair<std::string, uint32_t>> specials_;  // sorted by id
  uint32_t vocab_size_ = 0, bos_id_ = 0;
  Digest identity_{};
};

}  // namespace nt
