// SPDX-License-Identifier: MIT
// A prepared data folder: train_*.bin and val_*.bin shards, the tokenizer files and data.json.
//
// data.json: {"format": "nanotrain-data", "version": 1, "tokenizer": SPEC, "tokenizer_id": HEX,
//             "vocab_size": V, "bos_id": B, "train_shards": [...], "val_shards": [...], ...}
// SPEC is what load_tokenizer_in_dir(dir, SPEC) loads ("bytes" or a file name inside dir).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/shard_format.h"
#include "tokenizer/tokenizer.h"

namespace nt {

struct Dataset {
  std::string dir;
  std::string tokenizer_spec;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<std::unique_ptr<Shard>> train, val;
};

// Opens and validates every shard (checksums, tokenizer identity). Errors name the file.
Dataset open_dataset(const std::string& dir);

}  // namespace nt
