// SPDX-License-Identifier: MIT
#include "eval/core/scorer_plain.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace nt {

double sequence_forward_flops(const ModelConfig& c, int64_t len) {
  const double n = double(len);
  return 2.0 * double(count_matmul_params(c)) * n + 2.0 * c.depth * c.n_head * c.head_dim * n * n;
}

CandidateScore score_span(const float* logits, int64_t vocab, const CoreCandidate& c) {
  CandidateScore s;
  if (c.begin >= c.end) {
    s.mean_loss = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double total = 0;
  bool all = true;
  for (int t = c.begin; t < c.end; ++t) {
    const float* row = logits + int64_t(t - 1) * vocab;
    int64_t best = 0;
    for (int64_t v = 1; v < vocab; ++v)
      if (row[v] > row[best]) best = v;
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(double(row[v]) - double(row[best]));
    const int32_t target = c.tokens[size_t(t)];
    total += double(row[best]) + std::log(sum) - double(row[target]);
    all = all && best == target;
  }
  s.mean_loss = total / double(c.end - c.begin);
  s.greedy_match = all;
  return s;
}

PlainScorer::PlainScorer(Gpt& model) : model_(model) {}

void PlainScorer::score(const std::vector<CoreQuestion>& qs, std::vector<std::vector<CandidateScore>>& out) {
  const ModelConfig& cfg = model_.config();
  out.assign(qs.size(), {});
  for (size_t q = 0; q < qs.size(); ++q) {
    for (const CoreCandidate& c : qs[q].candidates) {
      const int T = int(c.tokens.size());
      NT_CHECK(T >= 1 && T <= cfg.seq_len && c.begin >= 1 && c.end <= T, "candidate of %d tokens, span [%d, %d)", T,
               c.begin, c.end);
      logits_.resize(size_t(T) * size_t(cfg.vocab_size));
      model_.forward_logits(c.tokens.data(), 1, T, logits_.data());
      out[q].push_back(score_span(logits_.data(), cfg.vocab_size, c));
      stats_.tokens_run += T;
      stats_.flops_run += sequence_forward_flops(cfg, T);
    }
  }
  stats_.flops_plain = stats_.flops_run;
}

}  // namespace nt
