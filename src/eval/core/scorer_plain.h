// SPDX-License-Identifier: MIT
// The reference scorer: every candidate runs whole through the model on its own, as the
// reference harness runs it; the span's losses and greedy tokens come from the full logits.
#pragma once
#include <vector>

#include "eval/core/scorer.h"
#include "model/gpt.h"

namespace nt {

// Forward FLOPs of one sequence of `len` tokens: 2 per matmul weight per token, plus the causal
// attention's QK^T and PV products (2 * L * H * D * len^2 in all).
double sequence_forward_flops(const ModelConfig& c, int64_t len);

// Mean cross-entropy over [begin, end) (token t scored by the logits of position t - 1; NaN for
// an empty span) and whether the first-maximum argmax reproduces every one of those tokens.
CandidateScore score_span(const float* logits, int64_t vocab, const CoreCandidate& c);

class PlainScorer : public CoreScorer {
 public:
  // model: built for batch 1 and its config's seq_len, weights loaded.
  explicit PlainScorer(Gpt& model);
  void score(const std::vector<CoreQuestion>& qs, std::vector<std::vector<CandidateScore>>& out) override;
  ScorerStats stats() const override { return stats_; }

 private:
  Gpt& model_;
  std::vector<float> logits_;
  ScorerStats stats_;
};

}  // namespace nt
