// SPDX-License-Identifier: MIT
// A forward-only pass over many short sequences at once, where a sequence may continue another
// one's rows (a shared prompt prefix) instead of repeating them.
//
// The rows of every sequence are concatenated into one (N, C) batch, so each linear layer is one
// GEMM over all of them with no padding. Only the attention knows where sequences begin: each
// segment attends causally to its own rows and, before them, to every row of its parent segment,
// whose keys and values the same layer has just computed. The values equal those of a separate
// whole-sequence forward of parent + segment, to rounding (fp32; segments without a parent run
// the training attention kernel, continuations a loop of their own). Every model variant runs as
// in training (gpt_variants.cc): the smear reads the previous row of the sequence, which for a
// continuation's first row is its parent's last; windowed layers see their window only.
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "model/params.h"

namespace nt {

// Rows [row, row + len) of the batch hold one sequence's tokens at positions parent_len + i. They
// see, before themselves, rows [parent_row, parent_row + parent_len): the sequence's first
// parent_len tokens, run as a segment of their own that has no parent (parent_len 0: no parent).
struct Segment {
  int64_t row = 0, len = 0;
  int64_t parent_row = 0, parent_len = 0;
};

// One sequence's keys and values at every layer, for decoding a token at a time (the sampler).
struct KvCache {
  Buffer<float> k, v;   // (L, seq_len, KVH * D)
  Buffer<float> last;   // (C) with the smear: the last token's normalised embedding
  int64_t len = 0;      // the tokens it holds
};

class SegmentForward {
 public:
  // weights: the model's parameters, read at each run (they must outlive this object); cos, sin:
  // the rotary tables (seq_len, head_dim / 2); max_rows: the largest batch run() takes.
  SegmentForward(const ModelConfig& cfg, const ModelTensors& weights, const KernelTable& kernels, const float* cos,
                 const float* sin, int64_t max_rows);

  // Runs tokens (rows of the segments, every row in exactly one segment) through the embedding,
  // the blocks and the final norm; returns the normalised final activations (rows, C), valid
  // until the next run.
  const float* run(const int32_t* tokens, const std::vector<Segment>& segments, int64_t rows);

  // Sizes the cache for one sequence of up to seq_len tokens, empty.
  void init_cache(KvCache& cache) const;
  // Runs tokens (rows) as the continuation of the cache's sequence (positions cache.len ...),
  // appending their keys and values to it; returns the normalised final activations (rows, C).
  const float* run_cached(const int32_t* tokens, int64_t rows, KvCache& cache);

  // Matmul FLOPs of one row through the blocks (no attention, no head), and attention FLOPs of
  // one (query, key) pair summed over the layers (a causal sequence of n rows counts n^2 / 2 pairs,
  // as the training FLOPs do).
  static double linear_flops_per_row(const ModelConfig& c);
  static double attention_flops_per_pair(const ModelConfig& c);

  int64_t max_rows() const { return max_rows_; }

 private:
  const float* blocks(const int32_t* tokens, int64_t rows, const std::vector<Segment>& segments, KvCache* cache);
  // The smear over rows whose previous rows prev_row_ names (-1: the sequence's first token;
  // -2: the cache's last token), from the normalised embeddings in x_.
  void smear(int64_t rows, const KvCache* cache);
  void value_embed(int l, const int32_t* tokens, float* v, int64_t rows);
  void mlp(const LayerTensors& lw, int64_t rows);
  void attention(const std::vector<Segment>& segments, int64_t window);
  void attention_cached(const float* k, const float* v, int64_t past, int64_t rows, int64_t window);

  ModelConfig cfg_;
  ModelTensors w_;
  const KernelTable& k_;
  ExecContext ctx_;  // job_threads() threads: the kernels' and this class's own loops
  const float *cos_, *sin_;
  int64_t max_rows_;
  Buffer<float> x_, ln_, q_, k_buf_, v_, att_, fc_, act_, rstd_, rstd_h_;
  Buffer<float> emb_, x0_, xback_;  // variants: the normalised embedding, x after the smear, the middle x
  std::vector<int64_t> prev_row_;    // the smear: each row's previous row
  Buffer<float> row_cos_, row_sin_;  // (rows, D/2): each row's rotary angles
  Buffer<float> lse_;                // (rows, H): the training kernel's log-sum-exp, unused
  Buffer<float> scratch_;            // per thread of ctx_: a block of query rows' scores and outputs
};

}  // namespace nt
