// SPDX-License-Identifier: MIT
// Training a byte-level BPE tokenizer (the algorithm of nanochat's rustbpe):
//  1. split every document with the pre-tokenisation pattern and count the distinct pieces
//     (in parallel, OpenMP);
//  2. start from the 256 single bytes; repeatedly merge the most frequent adjacent pair over all
//     pieces (weighted by count), ties to the smallest (left id, right id), with incremental pair
//     counts and a lazily refreshed max-heap;
//  3. ordinary tokens get ids (= tiktoken ranks) in merge order; the special tokens follow.
// Deterministic: the same documents and options give the same tokenizer, whatever the threads.
// If a merge yields bytes that already are a token (possible when two different pairs spell the
// same string), the pieces are merged into that token and no new id is spent.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/bpe_tokenizer.h"

namespace nt {

struct BpeTrainOptions {
  uint32_t vocab_size = 8192;  // total, special tokens included
  std::string pattern = kDefaultSplitPattern;
  std::vector<std::string> special_tokens = nanochat_special_tokens();  // the first is BOS
  std::string name = "nanotrain-bpe";
  // Called after each merge with (merges done, merges wanted), e.g. for a progress line.
  std::function<void(uint32_t, uint32_t)> on_merge;
};

struct BpeTrainStats {
  uint64_t bytes = 0, pieces = 0, unique_pieces = 0;
  uint32_t merges = 0;  // ordinary tokens beyond the 256 bytes
  double split_seconds = 0, merge_seconds = 0;
};

// Throws nt::Error on bad options (e.g. a vocabulary too small for bytes + specials).
std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string>& docs, const BpeTrainOptions& opt,
                                        BpeTrainStats* stats = nullptr);

}  // namespace nt
