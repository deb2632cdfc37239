// SPDX-License-Identifier: MIT
// The seam between CORE's rendering and the forward pass: questions of token sequences with the
// span each one is scored on, and a scorer that returns each span's mean loss and whether greedy
// decoding reproduces it. The plain scorer (scorer_plain.h) is the reference for faster ones.
#pragma once
#include <cstdint>
#include <vector>

namespace nt {

// One candidate sequence: tokens (BOS first, already truncated to the model's context) and
// the span [begin, end) of token positions whose prediction is scored: token t is predicted
// by the logits at position t-1 (so begin >= 1). An empty span (begin == end) scores a NaN mean
// loss, as the reference's mean over no positions does.
struct CoreCandidate {
  std::vector<int32_t> tokens;
  int begin = 0, end = 0;
};
// The candidates of one item (MC: one per choice, sharing a prefix; schema: one per context,
// sharing a suffix; LM: one).
struct CoreQuestion {
  std::vector<CoreCandidate> candidates;
};
struct CandidateScore {
  double mean_loss = 0;
  bool greedy_match = false;
};  // over the span
struct ScorerStats {
  int64_t tokens_run = 0;
  double flops_run = 0, flops_plain = 0;
};
class CoreScorer {
 public:
  virtual ~CoreScorer() = default;
  // out[q][c] for every question and candidate.
  virtual void score(const std::vector<CoreQuestion>& qs, std::vector<std::vector<CandidateScore>>& out) = 0;
  virtual ScorerStats stats() const = 0;
};

}  // namespace nt
