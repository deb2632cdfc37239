// SPDX-License-Identifier: MIT
// CORE's arithmetic and decisions: centered accuracy, the mean over tasks, the reference's choice
// among candidates (NaN and ties as Python's min), the span score from hand-made logits, the
// plain scorer against the model's own per-position losses, and the task loop with a scorer
// whose answers are known.
#include "eval/core/core_eval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/ref/ref_backend.h"
#include "core/rng.h"
#include "eval/core/scorer_plain.h"
#include "model/params.h"
#include "tokenizer/byte_tokenizer.h"

namespace nt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(CoreArithmetic, CenteredAndCore) {
  // b / 100 as the reference computes it (0.01 * b): 0.01 * 25 is not exactly 0.25.
  EXPECT_NEAR(centered_accuracy(0.25, 25), 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(centered_accuracy(1.0, 25), 1.0);
  EXPECT_DOUBLE_EQ(centered_accuracy(0.4, 25), 0.2);
  EXPECT_DOUBLE_EQ(centered_accuracy(0.3, 0), 0.3);
  EXPECT_DOUBLE_EQ(centered_accuracy(0.5, 62), (0.5 - 0.62) / 0.38);  // below the baseline: negative
  std::vector<CoreTaskResult> t(3);
  t[0].centered = 0.5, t[1].centered = -0.25, t[2].centered = 0.125;
  EXPECT_DOUBLE_EQ(core_score(t), 0.375 / 3);
  EXPECT_EQ(core_score({}), 0.0);
}

std::vector<CandidateScore> losses(std::vector<double> v) {
  std::vector<CandidateScore> s;
  for (double x : v) s.push_back({x, false});
  return s;
}

TEST(CoreArithmetic, ChoiceFollowsPythonMin) {
  EXPECT_EQ(choose_candidate(losses({2.0, 1.0, 3.0})), 1);
  EXPECT_EQ(choose_candidate(losses({1.0, 2.0, 1.0})), 0);   // the first of equal losses
  EXPECT_EQ(choose_candidate(losses({2.0, kNaN, 1.5})), 2);  // a NaN later never wins
  EXPECT_EQ(choose_candidate(losses({kNaN, 0.5, 0.1})), 0);  // a NaN first always wins
  EXPECT_EQ(choose_candidate(losses({7.0})), 0);
}

TEST(CoreScore, SpanFromHandMadeLogits) {
  // V = 3; positions 0..2 predict tokens 1..3.
  const float logits[] = {0, 0, 0, /**/ 1, 3, 2, /**/ 5, 5, 1, /**/ 9, 9, 9};
  CoreCandidate c{{0, 2, 1, 0}, 1, 3};
  const CandidateScore s = score_span(logits, 3, c);
  const double l0 = std::log(3.0);                                            // uniform, target 2
  const double l1 = std::log(std::exp(1) + std::exp(3) + std::exp(2)) - 3.0;  // target 1
  EXPECT_NEAR(s.mean_loss, (l0 + l1) / 2, 1e-12);
  EXPECT_TRUE(s.greedy_match == false);  // position 0 argmax is 0 (first max), not 2
  c = {{0, 0, 1, 0}, 1, 4};
  EXPECT_TRUE(score_span(logits, 3, c).greedy_match);  // ties resolve to the first maximum
  c.begin = c.end = 2;
  EXPECT_TRUE(std::isnan(score_span(logits, 3, c).mean_loss));
}

TEST(CoreScore, PlainScorerMatchesTheModelsOwnLosses) {
  ModelConfig cfg;
  cfg.depth = 2, cfg.d_model = 64, cfg.n_head = 4, cfg.n_kv_head = 2, cfg.head_dim = 16, cfg.seq_len = 24;
  cfg.vocab_size = 40;
  Gpt model(cfg, ref_kernels(), 1, cfg.seq_len);
  init_params(model.params(), 3);
  Rng r(9);
  for (size_t i = 0; i < model.params().data.size(); ++i) model.params().data.data()[i] += float(0.05 * r.normal());
  CoreQuestion q;
  for (int len : {24, 9, 2}) {
    CoreCandidate c;
    for (int t = 0; t < len; ++t) c.tokens.push_back(int32_t(r.below(40)));
    c.begin = len / 2 > 0 ? std::max(1, len / 2) : 1, c.end = len;
    q.candidates.push_back(c);
  }
  PlainScorer scorer(model);
  std::vector<std::vector<CandidateScore>> out;
  scorer.score({q, q}, out);
  ASSERT_EQ(out.size(), 2u);
  for (size_t i = 0; i < q.candidates.size(); ++i) {
    const CoreCandidate& c = q.candidates[i];
    const int T = int(c.tokens.size());
    std::vector<int32_t> tg(size_t(T), -1);
    for (int t = c.begin; t < c.end; ++t) tg[size_t(t - 1)] = c.tokens[size_t(t)];
    std::vector<float> l(static_cast<size_t>(T));
    const double sum = model.forward_loss(c.tokens.data(), tg.data(), 1, T, l.data());
    EXPECT_NEAR(out[0][i].mean_loss, sum / (c.end - c.begin), 1e-4) << i;
    EXPECT_EQ(out[1][i].mean_loss, out[0][i].mean_loss);
  }
  EXPECT_EQ(scorer.stats().tokens_run, 2 * (24 + 9 + 2));
  EXPECT_GT(scorer.stats().flops_run, 0);
}

// Answers by rule: the candidate whose last token is largest has the lowest loss, and an LM
// candidate matches greedily when its last token is even.
class RuleScorer : public CoreScorer {
 public:
  void score(const std::vector<CoreQuestion>& qs, std::vector<std::vector<CandidateScore>>& out) override {
    out.assign(qs.size(), {});
    for (size_t i = 0; i < qs.size(); ++i)
      for (const auto& c : qs[i].candidates) {
        out[i].push_back({-double(c.tokens.back()), c.tokens.back() % 2 == 0});
        stats_.tokens_run += int64_t(c.tokens.size());
      }
  }
  ScorerStats stats() const override { return stats_; }
  ScorerStats stats_;
};

CoreItem mc_item(std::vector<std::string> choices, int gold, int line) {
  CoreItem it;
  it.query = "Q";
  it.choices = std::move(choices);
  it.gold = gold;
  it.line = line;
  return it;
}

TEST(CoreEval, AccuracyCenteredAndCoreOverTasks) {
  CoreBundle b;
  CoreTask mc;
  mc.label = "mc", mc.type = CoreTaskType::kMultipleChoice, mc.shots = 10, mc.baseline = 50, mc.path = "mc.jsonl";
  // Chosen: the choice with the largest last byte; right on items 1 and 2 only.
  mc.items = {mc_item({"a", "b"}, 1, 1), mc_item({"z", "b"}, 0, 2), mc_item({"a", "c"}, 0, 3),
              mc_item({"x", "y"}, 0, 4)};
  CoreTask lm;
  lm.label = "lm", lm.type = CoreTaskType::kLanguageModeling, lm.shots = 0, lm.baseline = 0, lm.path = "lm.jsonl";
  for (const char* w : {"b", "c", "d"}) {
    CoreItem it;
    it.query = "say";
    it.continuation = w;
    lm.items.push_back(it);
  }
  b.tasks = {mc, lm};
  ByteTokenizer tok;
  RuleScorer scorer;
  int64_t last_all = 0;
  CoreEvalOptions o;
  o.on_progress = [&](const std::string&, int64_t, int64_t, int64_t all_done, int64_t all_total) {
    EXPECT_EQ(all_total, 7);
    last_all = all_done;
  };
  const CoreResult r = evaluate_core(b, tok, 64, scorer, o);
  EXPECT_EQ(last_all, 7);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].shots, 3);  // 10 asked, 3 other items
  EXPECT_EQ(r.tasks[0].items, 4);
  EXPECT_EQ(r.tasks[0].correct, 2);
  EXPECT_DOUBLE_EQ(r.tasks[0].accuracy, 0.5);
  EXPECT_NEAR(r.tasks[0].centered, 0.0, 1e-15);
  EXPECT_EQ(r.tasks[1].correct, 2);  // "b" (98) and "d" (100) are even
  EXPECT_DOUBLE_EQ(r.tasks[1].centered, 2.0 / 3);
  EXPECT_NEAR(r.core, (0.0 + 2.0 / 3) / 2, 1e-15);
  // Each task's share of the scorer's work, which adds up to the whole.
  EXPECT_GT(r.tasks[0].stats.tokens_run, 0);
  EXPECT_GT(r.tasks[1].stats.tokens_run, 0);
  EXPECT_EQ(r.tasks[0].stats.tokens_run + r.tasks[1].stats.tokens_run, r.stats.tokens_run);
  // Chunks of any size give the same decisions.
  o.chunk_questions = 1;
  o.on_progress = nullptr;
  const CoreResult ones = evaluate_core(b, tok, 64, scorer, o);
  for (size_t t = 0; t < 2; ++t)
    for (size_t i = 0; i < r.tasks[t].decisions.size(); ++i) {
      EXPECT_EQ(ones.tasks[t].decisions[i].line, r.tasks[t].decisions[i].line);
      EXPECT_EQ(ones.tasks[t].decisions[i].predicted, r.tasks[t].decisions[i].predicted);
    }
  // --max-per-task 1: one item and no shots.
  o.max_per_task = 1;
  o.on_progress = nullptr;
  const CoreResult one = evaluate_core(b, tok, 64, scorer, o);
  EXPECT_EQ(one.tasks[0].items, 1);
  EXPECT_EQ(one.tasks[0].shots, 0);
}

TEST(CoreEval, ItemTheReferenceCannotScoreNamesItsLine) {
  CoreBundle b;
  CoreTask lm;
  lm.label = "lm", lm.type = CoreTaskType::kLanguageModeling, lm.path = "lm.jsonl", lm.delimiter = "";
  CoreItem ok, bad;
  ok.query = "a", ok.continuation = "b", ok.line = 1;
  bad.query = "a", bad.continuation = "", bad.line = 2;  // nothing to predict
  lm.items = {ok, bad};
  b.tasks = {lm};
  ByteTokenizer tok;
  RuleScorer scorer;
  try {
    evaluate_core(b, tok, 64, scorer);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lm.jsonl:2: task 'lm'"), std::string::npos) << e.what();
  }
  CoreEvalOptions o;
  o.skip_bad = true;
  std::vector<std::string> skipped;
  o.on_skip = [&](const std::string& s) { skipped.push_back(s); };
  const CoreResult r = evaluate_core(b, tok, 64, scorer, o);
  EXPECT_EQ(r.tasks[0].items, 1);
  EXPECT_EQ(r.tasks[0].skipped, 1);
  ASSERT_EQ(skipped.size(), 1u);
}

}  // namespace
}  // namespace nt
