// SPDX-License-Identifier: MIT
// `nanotrain data prepare`: documents -> tokenizer -> train/val shards + data.json.
// The output folder holds generations: gen-N/ with the tokenizer and the shards, and data.json
// naming the one in use. A prepare writes gen-(N+1) beside it, switches data.json (an atomic
// rename) last, then removes gen-N, so an interrupted prepare leaves the old data whole and usable;
// its unfinished generation is removed by the next prepare. One prepare at a time holds the
// folder's lock; a non-empty folder that is not a data folder is refused.
// Tokenizes with all cores (documents in parallel, written in input order, so the output does not
// depend on the thread count); a progress line on long work.
#pragma once
#include <string>
#include <vector>

#include "data/documents.h"

namespace nt {

struct PrepareOptions {
  std::vector<std::string> inputs;      // training text (and validation, unless val_inputs given)
  std::vector<std::string> val_inputs;  // optional separate validation text
  std::string tokenizer = "bytes";      // "bytes" or a tokenizer file / tiktoken encoding name
  std::string out;                      // output folder
  double val_frac = 0.02;
  DocumentOptions docs;
  bool quiet = false;
  int threads = 0;                          // 0 = all cores
  uint64_t max_shard_tokens = 100'000'000;  // a new shard file after this many tokens
};

struct PrepareStats {
  size_t train_docs = 0, val_docs = 0;
  uint64_t train_tokens = 0, val_tokens = 0, train_bytes = 0, val_bytes = 0;
  size_t train_shards = 0, val_shards = 0;
  double seconds = 0;
};

PrepareStats prepare_data(const PrepareOptions& opt);

}  // namespace nt
