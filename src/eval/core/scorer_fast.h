// SPDX-License-Identifier: MIT
// The fast CORE scorer: forward-only, many questions per batch, each question's shared prefix run
// once, and the output head only on the rows whose logits a span reads.
//
// A multiple-choice question's candidates share their longest common token prefix (the few-shot
// examples and the query): it is run once as a segment of its own, and each candidate's remaining
// tokens run as a segment attending to it (segment_forward.h). Schema candidates share a suffix
// (the continuation), which cannot be shared: under causal attention a token's keys and values
// depend on every token before it, so the same continuation after different contexts has
// different activations. What prefix they share (often just BOS) is run once where that is
// worth it (shared_prefix below).
//
// Results equal a whole-sequence forward of each candidate in fp32 (Gpt::forward_logits), to
// rounding: the scorer always computes in fp32 from the model's fp32 weights, whatever precision
// the model trains in.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "eval/core/scorer.h"
#include "eval/core/segment_forward.h"
#include "model/gpt.h"

namespace nt {

class FastScorer : public CoreScorer {
 public:
  // model: its configuration, weights, kernel table and rotary tables are read at each score()
  // (it must outlive the scorer). max_rows: the rows (tokens) of one batch, raised to the model's
  // seq_len if smaller; the memory held grows with it (at most rows * 14 C floats).
  explicit FastScorer(Gpt& model, int64_t max_rows = 4096);

  // Throws nt::Error naming the question and candidate for a candidate the model cannot score
  // (empty, longer than the context, a span outside it, a token outside the vocabulary). An empty
  // span scores a NaN mean loss and no greedy match (scorer.h).
  void score(const std::vector<CoreQuestion>& qs, std::vector<std::vector<CandidateScore>>& out) override;
  // Totals over every score() call so far.
  ScorerStats stats() const override { return stats_; }

  // One question's share of a batch: its candidates `cands`, after its shared prefix of `prefix`
  // tokens (0: none; the candidates run whole).
  struct Unit {
    int64_t question = 0, prefix = 0;
    std::vector<int64_t> cands;
  };
  // Questions packed into batches of at most max_rows rows, the longest questions first; a
  // question that does not fit is split between batches, each part running the prefix again.
  static std::vector<std::vector<Unit>> plan(const std::vector<CoreQuestion>& qs, int64_t max_rows);
  // The candidates' longest common token prefix.
  static int64_t common_prefix(const CoreQuestion& q);
  // The prefix run once for a question: the common prefix where that saves at least a quarter of
  // the question's rows, else 0 (the candidates run whole). A short prefix (a schema question's
  // BOS) is not worth it: its continuations would leave the training attention kernel, which
  // runs segments without a parent, for the plainer loop that attends across segments.
  static int64_t shared_prefix(const CoreQuestion& q);

 private:
  // A span position: the logits of batch row `row` score token `target` for output `slot`.
  struct Need {
    int64_t row;
    int32_t target;
    int64_t slot;
  };
  void run_batch(const std::vector<CoreQuestion>& qs, const std::vector<Unit>& units,
                 const std::vector<int64_t>& slot_base);
  void head(const float* lnf, const std::vector<Need>& needs);

  Gpt& model_;
  int64_t max_rows_;
  std::unique_ptr<SegmentForward> fwd_;
  ScorerStats stats_;
  std::vector<double> loss_sum_;    // per output slot (question, candidate), this score() call
  std::vector<uint8_t> greedy_;     // per output slot: every span position's argmax matched
  Buffer<float> head_in_, logits_;  // (chunk, C), (chunk, V)
  std::vector<int32_t> targets_;    // per head row of a chunk
  std::vector<float> losses_;
  std::vector<int64_t> argmax_;
};

}  // namespace nt
