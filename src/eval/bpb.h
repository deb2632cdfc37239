// SPDX-License-Identifier: MIT
// val_bpb = sum of cross-entropy nats over validation targets / (ln 2 * sum of the UTF-8 bytes
// of those target tokens). Targets that are special tokens (0 bytes) are excluded from both.
#pragma once
#include <cstdint>

#include "data/loader.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

namespace nt {

struct BpbResult {
  double bpb = 0;
  double loss = 0;       // mean nats per counted target
  uint64_t targets = 0;  // counted targets
  uint64_t bytes = 0;
  double seconds = 0;
};

// Evaluates every batch of the loader (B, T must fit the model's buffers).
BpbResult evaluate_bpb(Gpt& model, const ValLoader& val, const Tokenizer& tok, int B, int T);

// The same in parts, for processes that share the batches: batches [first, end) each put their
// nats, bytes and counted targets in sums[3 i], sums[3 i + 1], sums[3 i + 2] (sums holds
// 3 * num_batches() doubles; the other batches' entries are left alone).
void bpb_batch_sums(Gpt& model, const ValLoader& val, const Tokenizer& tok, int B, int T, size_t first, size_t end,
                    double* sums);
// The result from every batch's sums, added in batch order: whichever process filled in which
// batches, the same sums give the same bits (seconds is left 0).
BpbResult bpb_from_batch_sums(const double* sums, size_t batches);

}  // namespace nt
