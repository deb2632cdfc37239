// SPDX-License-Identifier: MIT
// A prepared data folder: data.json, and the generation it names (gen-N/: the tokenizer files,
// train_*.bin and val_*.bin shards; see data/prepare.h).
//
// data.json: {"format": "nanotrain-data", "version": 2, "generation": "gen-N", "tokenizer": SPEC,
//             "tokenizer_id": HEX, "vocab_size": V, "bos_id": B, "train_shards": [...],
//             "val_shards": [...], "train_docs", "val_docs", "train_tokens", "val_tokens", ...}
// SPEC is what load_tokenizer_in_dir(dir, SPEC) loads ("bytes" or a path inside dir); shard names
// are paths inside dir.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/shard_format.h"
#include "tokenizer/tokenizer.h"

namespace nt {

inline constexpr int kDataVersion = 2;  // data.json's layout

struct Dataset {
  std::string dir;
  std::string tokenizer_spec;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<std::unique_ptr<Shard>> train, val;
  // Tokens in the training split: one epoch.
  uint64_t train_tokens() const {
    uint64_t n = 0;
    for (const auto& s : train) n += s->size();
    return n;
  }
};

// Opens and validates every shard (checksums, token ids, tokenizer identity) and data.json's
// counts against them. Errors name the file.
Dataset open_dataset(const std::string& dir);

}  // namespace nt
