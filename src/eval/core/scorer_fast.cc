// SPDX-License-Identifier: MIT
#include "eval/core/scorer_fast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace nt {

namespace {

void validate(const std::vector<CoreQuestion>& qs, const ModelConfig& c) {
  for (size_t qi = 0; qi < qs.size(); ++qi) {
    if (qs[qi].candidates.empty()) fail("CORE scorer: question %zu has no candidates", qi);
    for (size_t ci = 0; ci < qs[qi].candidates.size(); ++ci) {
      const CoreCandidate& cand = qs[qi].candidates[ci];
      const int64_t n = int64_t(cand.tokens.size());
      if (n == 0 || n > c.seq_len)
        fail("CORE scorer: question %zu, candidate %zu: %lld tokens, outside the model's context 1..%d", qi, ci,
             static_cast<long long>(n), c.seq_len);
      if (cand.begin < 1 || cand.begin > cand.end || cand.end > n)
        fail("CORE scorer: question %zu, candidate %zu: span [%d, %d) outside 1..%lld", qi, ci, cand.begin, cand.end,
             static_cast<long long>(n));
      for (int32_t t : cand.tokens)
        if (t < 0 || t >= c.vocab_size)
          fail("CORE scorer: question %zu, candidate %zu: token %d outside the vocabulary (%d)", qi, ci, t,
               c.vocab_size);
    }
  }
}

// Rows of logits at once: the training head's chunk, at most kHeadChunkRows (a few span rows per
// question; the chunk's logits are the scorer's largest buffer).
int64_t head_rows(int64_t vocab) { return std::min(kHeadChunkRows, head_chunk_rows(vocab)); }

// FLOPs of a whole-sequence forward of n tokens with the head on every row (the plain scorer's).
double plain_flops(const ModelConfig& c, int64_t n) {
  return 2.0 * double(count_matmul_params(c)) * double(n) +
         double(n) * double(n) / 2 * SegmentForward::attention_flops_per_pair(c);
}

}  // namespace


FastScorer::FastScorer(Gpt& model, int64_t max_rows)
    : model_(model), max_rows_(std::max<int64_t>(max_rows, model.config().seq_len)) {
  const ModelConfig& c = model.config();
  fwd_ = std::make_unique<SegmentForward>(c, model.params().views(), model.kernels(), model.rope_cos(),
                                          model.rope_sin(), max_rows_);
  const int64_t chunk = head_rows(c.vocab_size);
  head_in_.resize(size_t(chunk * c.d_model));
  logits_.resize(size_t(chunk * c.vocab_size));
}

int64_t FastScorer::common_prefix(const CoreQuestion& q) {
  if (q.candidates.empty()) return 0;
  const auto& a = q.candidates[0].tokens;
  size_t p = a.size();
  for (const CoreCandidate& c : q.candidates) {
    p = std::min(p, c.tokens.size());
    p = size_t(std::mismatch(a.begin(), a.begin() + ptrdiff_t(p), c.tokens.begin()).first - a.begin());
  }
  return int64_t(p);
}

int64_t FastScorer::shared_prefix(const CoreQuestion& q) {
  const int64_t p = common_prefix(q), n = int64_t(q.candidates.size());
  int64_t total = 0;
  for (const CoreCandidate& c : q.candidates) total += int64_t(c.tokens.size());
  return n >= 2 && 4 * (n - 1) * p >= total ? p : 0;
}

std::vector<std::vector<FastScorer::Unit>> FastScorer::plan(const std::vector<CoreQuestion>& qs, int64_t max_rows) {
  std::vector<int64_t> prefix(qs.size()), rows(qs.size()), order(qs.size());
  for (size_t q = 0; q < qs.size(); ++q) {
    prefix[q] = shared_prefix(qs[q]);
    rows[q] = prefix[q];
    for (const CoreCandidate& c : qs[q].candidates) rows[q] += int64_t(c.tokens.size()) - prefix[q];
  }
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rows[size_t(a)] > rows[size_t(b)]; });
  std::vector<std::vector<Unit>> batches(1);
  int64_t used = 0;
  for (int64_t q : order) {
    const CoreQuestion& question = qs[size_t(q)];
    const int64_t p = prefix[size_t(q)], n = int64_t(question.candidates.size());
    auto suffix = [&](int64_t c) { return int64_t(question.candidates[size_t(c)].tokens.size()) - p; };
    for (int64_t c = 0; c < n;) {
      if (used + p + suffix(c) > max_rows) batches.emplace_back(), used = 0;
      NT_CHECK(p + suffix(c) <= max_rows, "a candidate longer than the batch");
      Unit u{q, p, {}};
      used += p;
      for (; c < n && used + suffix(c) <= max_rows; ++c) u.cands.push_back(c), used += suffix(c);
      batches.back().push_back(std::move(u));
    }
  }
  if (batches.back().empty()) batches.pop_back();
  return batches;
}

void FastScorer::score(const std::vector<CoreQuestion>& qs, std::vector<std::vector<CandidateScore>>& out) {
  const ModelConfig& c = model_.config();
  validate(qs, c);
  std::vector<int64_t> slot_base(qs.size() + 1, 0);
  for (size_t q = 0; q < qs.size(); ++q) {
    slot_base[q + 1] = slot_base[q] + int64_t(qs[q].candidates.size());
    for (const CoreCandidate& cand : qs[q].candidates)
      stats_.flops_plain += plain_flops(c, int64_t(cand.tokens.size()));
  }
  loss_sum_.assign(size_t(slot_base.back()), 0.0);
  greedy_.assign(size_t(slot_base.back()), 1);
  for (const auto& batch : plan(qs, max_rows_)) run_batch(qs, batch, slot_base);
  out.assign(qs.size(), {});
  for (size_t q = 0; q < qs.size(); ++q) {
    out[q].resize(qs[q].candidates.size());
    for (size_t ci = 0; ci < qs[q].candidates.size(); ++ci) {
      const CoreCandidate& cand = qs[q].candidates[ci];
      const size_t slot = size_t(slot_base[q]) + ci;
      // An empty span: a NaN mean and no match, as the reference's mean over no positions.
      const bool empty = cand.end == cand.begin;
      out[q][ci].mean_loss =
          empty ? std::numeric_limits<double>::quiet_NaN() : loss_sum_[slot] / double(cand.end - cand.begin);
      out[q][ci].greedy_match = !empty && greedy_[slot] != 0;
    }
  }
}

// Lays the batch's units out as rows (each prefix, then its candidates' remaining tokens), runs
// the blocks, and scores the span positions.
void FastScorer::run_batch(const std::vector<CoreQuestion>& qs, const std::vector<Unit>& units,
                           const std::vector<int64_t>& slot_base) {
  const ModelConfig& c = model_.config();
  std::vector<int32_t> tokens;
  std::vector<Segment> segments;
  std::vector<Need> needs;
  double pairs = 0;
  auto add_segment = [&](Segment s) {
    segments.push_back(s);
    pairs += double(s.len) * double(s.parent_len) + double(s.len) * double(s.len) / 2;
  };
  for (const Unit& u : units) {
    const auto& cands = qs[size_t(u.question)].candidates;
    const int64_t prefix_row = int64_t(tokens.size());
    if (u.prefix > 0) {
      const auto& first = cands[size_t(u.cands[0])].tokens;
      tokens.insert(tokens.end(), first.begin(), first.begin() + u.prefix);
      add_segment({prefix_row, u.prefix, 0, 0});
    }
    for (int64_t ci : u.cands) {
      const CoreCandidate& cand = cands[size_t(ci)];
      const int64_t row = int64_t(tokens.size()), len = int64_t(cand.tokens.size()) - u.prefix;
      tokens.insert(tokens.end(), cand.tokens.begin() + u.prefix, cand.tokens.end());
      if (len > 0) add_segment({row, len, prefix_row, u.prefix});
      // Token t is scored by the logits at position t - 1: a prefix row or one of the candidate's own.
      for (int64_t t = cand.begin; t < cand.end; ++t) {
        const int64_t pos = t - 1, r = pos < u.prefix ? prefix_row + pos : row + (pos - u.prefix);
        needs.push_back({r, cand.tokens[size_t(t)], slot_base[size_t(u.question)] + ci});
      }
    }
  }
  const int64_t rows = int64_t(tokens.size());
  const float* lnf = fwd_->run(tokens.data(), segments, rows);
  head(lnf, needs);
  stats_.tokens_run += rows;
  stats_.flops_run += double(rows) * SegmentForward::linear_flops_per_row(c) +
                      pairs * SegmentForward::attention_flops_per_pair(c) +
                      double(needs.size()) * 2.0 * c.d_model * c.vocab_size;
}

namespace {

// The first index of the largest soft-capped logit (as torch.argmax after the cap) of a row of raw
// logits: the cap can merge the largest raw values into one, so those that may tie are capped
// and compared, the lowest index winning. cap 0: no cap.
int64_t first_capped_argmax(const float* l, int64_t V, float cap) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < V; ++j) mx = std::max(mx, l[j]);
  if (!(cap > 0)) return std::find(l, l + V, mx) - l;  // (V for a row with a NaN: not any target)
  auto capped = [cap](float x) { return cap * std::tanh(x / cap); };
  const float top = capped(mx);
  // Every raw value at or below lo caps strictly below top (the cap is monotone).
  float delta = 1e-3f * std::max(1.0f, std::abs(mx)), lo = mx - delta;
  while (std::isfinite(lo) && capped(lo) == top) delta *= 2, lo = mx - delta;
  for (int64_t j = 0; j < V; ++j)
    if (l[j] > lo && capped(l[j]) == top) return j;
  return 0;  // (a row with a NaN)
}

}  // namespace

// The head on each span position's row, in chunks: the kernels' soft-capped cross-entropy of its
// target, and whether the target is the greedy choice. (A row several candidates read, the last
// of a shared prefix, runs once for each: a few rows per question.)
void FastScorer::head(const float* lnf, const std::vector<Need>& needs) {
  const ModelConfig& c = model_.config();
  const int64_t C = c.d_model, V = c.vocab_size, chunk = head_rows(V);
  const float cap = float(c.softcap);
  const KernelTable& k = model_.kernels();
  const ExecContext& ctx = model_.exec();
  const float* lm_head = model_.params().views().lm_head;
  targets_.resize(size_t(chunk)), losses_.resize(size_t(chunk)), argmax_.resize(size_t(chunk));
  for (int64_t r0 = 0; r0 < int64_t(needs.size()); r0 += chunk) {
    const int64_t m = std::min<int64_t>(chunk, int64_t(needs.size()) - r0);
    for (int64_t i = 0; i < m; ++i) {
      std::copy_n(lnf + needs[size_t(r0 + i)].row * C, C, head_in_.data() + i * C);
      targets_[size_t(i)] = needs[size_t(r0 + i)].target;
    }
    k.matmul(ctx, logits_.data(), head_in_.data(), lm_head, m, V, C, false, true, 0.0f);
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
    for (int64_t i = 0; i < m; ++i) argmax_[size_t(i)] = first_capped_argmax(logits_.data() + i * V, V, cap);
    k.softcap_xent(ctx, logits_.data(), losses_.data(), targets_.data(), m, V, cap, 0.0f);
    for (int64_t i = 0; i < m; ++i) {
      const Need& n = needs[size_t(r0 + i)];
      loss_sum_[size_t(n.slot)] += double(losses_[size_t(i)]);
      if (argmax_[size_t(i)] != n.target) greedy_[size_t(n.slot)] = 0;
    }
  }
}

}  // namespace nt
