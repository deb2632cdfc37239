// SPDX-License-Identifier: MIT
// The fast CORE scorer against a whole-sequence forward of each candidate (Gpt::forward_logits):
// the same mean span losses and greedy decisions on awkward shapes (grouped-query heads, one
// token after the shared prefix, a prefix that is a whole candidate, sequences of the full
// context, questions split between batches), its FLOP counts, and its refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_tables.h"
#include "backends/ref/ref_backend.h"
#include "core/check.h"
#include "core/rng.h"
#include "eval/core/scorer_fast.h"
#include "model/gpt.h"

namespace nt {
namespace {

ModelConfig small(int n_kv_head = 2) {
  ModelConfig c;
  c.depth = 2, c.d_model = 64, c.n_head = 4, c.n_kv_head = n_kv_head, c.head_dim = 16, c.seq_len = 32,
  c.vocab_size = 50;
  return c;
}

// Random weights everywhere (the standard init zeroes the head and the output projections, which
// would make every prediction uniform).
std::unique_ptr<Gpt> random_model(const ModelConfig& c, const KernelTable& k, uint64_t seed) {
  auto m = std::make_unique<Gpt>(c, k, 1, c.seq_len);
  init_params(m->params(), seed);
  Rng r(seed + 1);
  for (size_t i = 0; i < m->params().specs.size(); ++i)
    for (int64_t j = 0; j < m->params().specs[i].numel(); ++j) m->params().tensor(i)[j] += float(0.2 * r.normal());
  return m;
}

std::vector<int32_t> random_tokens(Rng& r, int64_t n, int vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(r.below(uint64_t(vocab)));
  return t;
}

// The plain score: a forward of the whole candidate, the loss in double. tied: some span
// position's two largest logits are within 1e-4, where the greedy decision may differ by rounding.
struct Plain {
  double mean_loss;
  bool greedy, tied;
};
Plain plain_score(Gpt& m, const CoreCandidate& cand) {
  const int64_t n = int64_t(cand.tokens.size()), V = m.config().vocab_size;
  std::vector<float> logits(size_t(n * V));
  m.forward_logits(cand.tokens.data(), 1, int(n), logits.data());
  Plain p{0, true, false};
  for (int64_t t = cand.begin; t < cand.end; ++t) {
    const float* z = logits.data() + (t - 1) * V;
    const int64_t best = std::max_element(z, z + V) - z;
    double sum = 0, second = -INFINITY;
    for (int64_t j = 0; j < V; ++j) {
      sum += std::exp(double(z[j]) - double(z[best]));
      if (j != best) second = std::max(second, double(z[j]));
    }
    p.mean_loss += double(z[best]) + std::log(sum) - double(z[cand.tokens[size_t(t)]]);
    p.greedy = p.greedy && best == cand.tokens[size_t(t)];
    p.tied = p.tied || double(z[best]) - second < 1e-4;
  }
  p.mean_loss /= double(cand.end - cand.begin);
  return p;
}

void expect_matches_plain(Gpt& m, FastScorer& s, const std::vector<CoreQuestion>& qs) {
  std::vector<std::vector<CandidateScore>> out;
  s.score(qs, out);
  ASSERT_EQ(out.size(), qs.size());
  for (size_t q = 0; q < qs.size(); ++q) {
    ASSERT_EQ(out[q].size(), qs[q].candidates.size());
    for (size_t c = 0; c < qs[q].candidates.size(); ++c) {
      const Plain p = plain_score(m, qs[q].candidates[c]);
      EXPECT_NEAR(out[q][c].mean_loss, p.mean_loss, 1e-5 * std::abs(p.mean_loss)) << "question " << q << " cand " << c;
      if (!p.tied) {
        EXPECT_EQ(out[q][c].greedy_match, p.greedy) << "question " << q << " cand " << c;
      }
    }
  }
}

// Multiple choice: a shared prefix, then each choice; the span starts after the common prefix.
CoreQuestion multiple_choice(Rng& r, int vocab, int64_t prefix, const std::vector<int64_t>& suffixes) {
  CoreQuestion q;
  const auto shared = random_tokens(r, prefix, vocab);
  for (int64_t n : suffixes) {
    CoreCandidate c;
    c.tokens = shared;
    const auto tail = random_tokens(r, n, vocab);
    c.tokens.insert(c.tokens.end(), tail.begin(), tail.end());
    q.candidates.push_back(std::move(c));
  }
  const int64_t lcp = FastScorer::common_prefix(q);
  for (auto& c : q.candidates)
    c.begin = int(std::max<int64_t>(1, std::min<int64_t>(lcp, int64_t(c.tokens.size()) - 1))),
    c.end = int(c.tokens.size());
  return q;
}

// Schema: different contexts, one continuation scored after each.
CoreQuestion schema(Rng& r, int vocab, const std::vector<int64_t>& contexts, int64_t continuation) {
  CoreQuestion q;
  const auto cont = random_tokens(r, continuation, vocab);
  for (int64_t n : contexts) {
    CoreCandidate c;
    c.tokens = random_tokens(r, n, vocab);
    c.tokens[0] = 0;  // BOS: the only prefix the contexts share
    c.begin = int(n);
    c.tokens.insert(c.tokens.end(), cont.begin(), cont.end());
    c.end = int(c.tokens.size());
    q.candidates.push_back(std::move(c));
  }
  return q;
}

// Language modelling: one candidate, the span [begin, n).
CoreQuestion language_model(Rng& r, int vocab, int64_t n, int begin) {
  CoreQuestion q;
  CoreCandidate c;
  c.tokens = random_tokens(r, n, vocab);
  c.begin = begin, c.end = int(n);
  q.candidates.push_back(std::move(c));
  return q;
}

std::vector<CoreQuestion> awkward_questions(const ModelConfig& c, uint64_t seed) {
  Rng r(seed);
  const int V = c.vocab_size, T = c.seq_len;
  std::vector<CoreQuestion> qs;
  qs.push_back(multiple_choice(r, V, 20, {3, 1, 5, 2}));  // one choice of a single token
  qs.push_back(multiple_choice(r, V, T - 1, {1, 1, 1}));  // prefix = the whole sequence but one
  qs.push_back(multiple_choice(r, V, 12, {T - 12, 4}));   // a choice of exactly T tokens
  qs.push_back(multiple_choice(r, V, 1, {9, 7}));         // only BOS shared
  qs.push_back(multiple_choice(r, V, 6, {2}));            // one choice
  qs.push_back(schema(r, V, {10, 14, 7}, 5));
  qs.push_back(schema(r, V, {T - 3, 4}, 3));     // a context filling the window
  qs.push_back(language_model(r, V, T, T - 4));  // exactly T tokens
  qs.push_back(language_model(r, V, 2, 1));      // the shortest possible
  qs.push_back(language_model(r, V, 17, 3));
  // A choice that is itself the shared prefix of the others: its span lies in the prefix's rows.
  CoreQuestion nested = multiple_choice(r, V, 8, {0, 3, 6});
  for (auto& cand : nested.candidates) cand.begin = 5, cand.end = int(cand.tokens.size());
  qs.push_back(std::move(nested));
  return qs;
}

// Every CPU table this machine runs (their attention and GEMM kernels differ), with grouped-query,
// multi-query and plain multi-head attention.
TEST(FastScorer, MatchesWholeSequenceForwardOnAwkwardShapes) {
  for (const KernelTable* k : cpu_kernel_tables())
    for (int kvh : {2, 1, 4}) {
      const ModelConfig c = small(kvh);
      auto m = random_model(c, *k, 7 + uint64_t(kvh));
      FastScorer s(*m);
      SCOPED_TRACE(std::string(k->name) + ", n_kv_head " + std::to_string(kvh));
      expect_matches_plain(*m, s, awkward_questions(c, 3));
    }
}

// Rows of q, k and v that are not 64-byte aligned in the batch (three heads of 8, one kv head),
// and sequences longer than the attention kernels' tiles.
TEST(FastScorer, MatchesOnOddHeadsAndLongSequences) {
  ModelConfig odd = small(1);
  odd.n_head = 3, odd.head_dim = 8, odd.d_model = 24;
  ModelConfig wide = small(2);
  wide.seq_len = 160, wide.head_dim = 32, wide.d_model = 128;
  for (const ModelConfig& c : {odd, wide}) {
    auto m = random_model(c, cpu_kernels(), 41);
    FastScorer s(*m);
    Rng r(10);
    std::vector<CoreQuestion> qs = awkward_questions(c, 5);
    const int64_t T = c.seq_len;
    qs.push_back(multiple_choice(r, c.vocab_size, T - 20, {20, 7, 13}));
    qs.push_back(schema(r, c.vocab_size, {T / 2, T - 9}, 9));
    qs.push_back(language_model(r, c.vocab_size, T - 3, int(T / 2)));
    SCOPED_TRACE("seq_len " + std::to_string(T));
    expect_matches_plain(*m, s, qs);
  }
}

// Every model variant alone and all together, on every table: the smear's previous row across a
// shared prefix, value embeddings, residual scalars, backout, the QK scale, no soft-cap, tied
// embeddings, GELU and SwiGLU, and short windows (8 keys, shorter than most prefixes, so that
// continuations' rows see part of their parent) in both attention paths.
std::vector<std::pair<std::string, ModelConfig>> variant_configs() {
  const ModelConfig base = small();
  std::vector<std::pair<std::string, ModelConfig>> out;
  auto add = [&](const std::string& name, auto set) {
    ModelConfig c = base;
    c.depth = 3;
    set(c);
    out.push_back({name, c});
  };
  add("smear", [](ModelConfig& c) { c.smear = true; });
  add("value embeds", [](ModelConfig& c) { c.value_embeds = true; });
  add("resid scalars", [](ModelConfig& c) { c.resid_scalars = true; });
  add("backout", [](ModelConfig& c) { c.backout = true; });
  add("qk scale", [](ModelConfig& c) { c.qk_scale = 1.2; });
  add("no soft-cap", [](ModelConfig& c) { c.softcap = 0; });
  add("tied", [](ModelConfig& c) { c.tie_embeddings = true; });
  add("gelu", [](ModelConfig& c) { c.mlp = "gelu"; });
  add("swiglu", [](ModelConfig& c) { c.mlp = "swiglu"; });
  add("windows", [](ModelConfig& c) { c.window_pattern = "SL", c.short_window = 8; });
  add("all", [](ModelConfig& c) {
    c.smear = c.value_embeds = c.resid_scalars = c.backout = c.tie_embeddings = true;
    c.qk_scale = 1.2, c.softcap = 0, c.mlp = "swiglu", c.window_pattern = "SSL", c.short_window = 8;
  });
  return out;
}

TEST(FastScorer, MatchesEveryVariant) {
  std::vector<const KernelTable*> tables = cpu_kernel_tables();
  tables.push_back(&ref_kernels());
  for (const KernelTable* k : tables)
    for (const auto& [name, c] : variant_configs()) {
      c.validate();
      auto m = random_model(c, *k, 17);
      FastScorer s(*m);
      SCOPED_TRACE(std::string(k->name) + ", " + name);
      expect_matches_plain(*m, s, awkward_questions(c, 6));
    }
}

TEST(FastScorer, MatchesOnTheReferenceTable) {
  const ModelConfig c = small();
  auto m = random_model(c, ref_kernels(), 9);
  FastScorer s(*m);
  expect_matches_plain(*m, s, awkward_questions(c, 4));
}

// With batches of one context's rows, questions are split between batches (each part runs its
// prefix again); the scores stay the same.
TEST(FastScorer, QuestionsSplitBetweenBatches) {
  const ModelConfig c = small();
  auto m = random_model(c, cpu_kernels(), 11);
  Rng r(5);
  std::vector<CoreQuestion> qs;
  for (int i = 0; i < 6; ++i) qs.push_back(multiple_choice(r, c.vocab_size, 14 + i, {5, 9, 2, 7}));
  const auto batches = FastScorer::plan(qs, c.seq_len);
  std::vector<int> parts(qs.size(), 0);
  for (const auto& b : batches) {
    int64_t rows = 0;
    for (const auto& u : b) {
      ++parts[size_t(u.question)];
      rows += u.prefix;
      for (int64_t ci : u.cands)
        rows += int64_t(qs[size_t(u.question)].candidates[size_t(ci)].tokens.size()) - u.prefix;
    }
    EXPECT_LE(rows, c.seq_len);
  }
  EXPECT_GT(*std::max_element(parts.begin(), parts.end()), 1) << "no question was split";
  FastScorer s(*m, c.seq_len);
  expect_matches_plain(*m, s, qs);
}

// Rows run and FLOPs: a four-choice question runs its prefix once; the head runs only on span rows.
TEST(FastScorer, CountsTokensAndFlops) {
  const ModelConfig c = small();
  auto m = random_model(c, cpu_kernels(), 13);
  Rng r(8);
  std::vector<CoreQuestion> qs{multiple_choice(r, c.vocab_size, 24, {2, 3, 4, 5})};
  const int64_t p = FastScorer::shared_prefix(qs[0]);
  ASSERT_GE(p, 24);
  FastScorer s(*m);
  std::vector<std::vector<CandidateScore>> out;
  s.score(qs, out);
  int64_t rows = p;
  for (const auto& cand : qs[0].candidates) rows += int64_t(cand.tokens.size()) - p;
  const ScorerStats st = s.stats();
  EXPECT_EQ(st.tokens_run, rows);
  const double lin = SegmentForward::linear_flops_per_row(c), att = SegmentForward::attention_flops_per_pair(c),
               head = 2.0 * c.d_model * c.vocab_size;
  // Plain: every candidate whole, the head on every row (2 FLOPs per matmul weight per token) and
  // n^2 / 2 attention pairs. Run: the prefix's pairs, each continuation's to the prefix and its own
  // causal half, and the head on the span rows only.
  double plain = 0, pairs = double(p) * double(p) / 2, spans = 0;
  for (const auto& cand : qs[0].candidates) {
    const double n = double(cand.tokens.size()), own = n - double(p);
    plain += 2.0 * double(count_matmul_params(c)) * n + n * n / 2 * att;
    pairs += own * double(p) + own * own / 2;
    spans += cand.end - cand.begin;
  }
  EXPECT_DOUBLE_EQ(lin + head, 2.0 * double(count_matmul_params(c)));
  EXPECT_DOUBLE_EQ(st.flops_plain, plain);
  EXPECT_DOUBLE_EQ(st.flops_run, double(rows) * lin + pairs * att + spans * head);
  EXPECT_LT(st.flops_run, plain);
  s.score(qs, out);  // stats accumulate over calls
  EXPECT_EQ(s.stats().tokens_run, 2 * rows);
}

// A prefix is run once only where that saves a quarter of the rows: not a schema question's BOS,
// not a single candidate.
TEST(FastScorer, SharesOnlyPrefixesWorthSharing) {
  const ModelConfig c = small();
  Rng r(12);
  const CoreQuestion sch = schema(r, c.vocab_size, {10, 12}, 4), lm = language_model(r, c.vocab_size, 20, 5);
  EXPECT_EQ(FastScorer::common_prefix(sch), 1);
  EXPECT_EQ(FastScorer::shared_prefix(sch), 0);
  EXPECT_EQ(FastScorer::common_prefix(lm), 20);
  EXPECT_EQ(FastScorer::shared_prefix(lm), 0);
  const CoreQuestion mc = multiple_choice(r, c.vocab_size, 6, {6, 6});  // saves 6 of 24 rows
  EXPECT_EQ(FastScorer::shared_prefix(mc), FastScorer::common_prefix(mc));
  auto m = random_model(c, cpu_kernels(), 3);
  FastScorer s(*m);
  std::vector<std::vector<CandidateScore>> out;
  s.score({sch}, out);
  EXPECT_EQ(s.stats().tokens_run, 10 + 4 + 12 + 4);
}

// Four choices whose shared prefix is 90 % of each (few-shot examples and the query): the forward
// runs the prefix once and the head only on span rows, most of a plain scorer's FLOPs saved.
TEST(FastScorer, PrefixSharingSavesMostFlopsOnMultipleChoice) {
  const ModelConfig c = small();
  auto m = random_model(c, cpu_kernels(), 29);
  Rng r(6);
  std::vector<CoreQuestion> qs;
  for (int i = 0; i < 8; ++i) qs.push_back(multiple_choice(r, c.vocab_size, 27, {3, 3, 3, 3}));
  FastScorer s(*m);
  std::vector<std::vector<CandidateScore>> out;
  s.score(qs, out);
  const ScorerStats st = s.stats();
  EXPECT_LT(st.flops_run, 0.4 * st.flops_plain) << "saved " << 1 - st.flops_run / st.flops_plain;
}

// A continuation the model itself decodes greedily matches; one token changed does not.
TEST(FastScorer, GreedyMatchOnTheModelsOwnContinuation) {
  const ModelConfig c = small();
  auto m = random_model(c, cpu_kernels(), 17);
  Rng r(2);
  CoreCandidate cand{random_tokens(r, 10, c.vocab_size), 10, 18};
  std::vector<float> logits(size_t(c.seq_len) * size_t(c.vocab_size));
  while (cand.tokens.size() < 18) {
    const int n = int(cand.tokens.size());
    m->forward_logits(cand.tokens.data(), 1, n, logits.data());
    const float* z = logits.data() + size_t(n - 1) * size_t(c.vocab_size);
    cand.tokens.push_back(int32_t(std::max_element(z, z + c.vocab_size) - z));
  }
  ASSERT_FALSE(plain_score(*m, cand).tied);
  CoreCandidate wrong = cand;
  wrong.tokens[15] = (wrong.tokens[15] + 1) % c.vocab_size;
  // As two candidates of one question too: their shared prefix ends inside the span.
  std::vector<CoreQuestion> qs{CoreQuestion{{cand}}, CoreQuestion{{wrong}}, CoreQuestion{{cand, wrong}}};
  FastScorer s(*m);
  std::vector<std::vector<CandidateScore>> out;
  s.score(qs, out);
  EXPECT_TRUE(out[0][0].greedy_match);
  EXPECT_FALSE(out[1][0].greedy_match);
  EXPECT_TRUE(out[2][0].greedy_match);
  EXPECT_FALSE(out[2][1].greedy_match);
  expect_matches_plain(*m, s, qs);
}

// With the standard init's zero head every logit ties: the argmax is the lowest index (token 0),
// as torch.argmax, and the loss is log V.
TEST(FastScorer, ArgmaxTiesGoToTheLowestIndex) {
  const ModelConfig c = small();
  Gpt m(c, cpu_kernels(), 1, c.seq_len);
  init_params(m.params(), 19);
  FastScorer s(m);
  std::vector<CoreQuestion> qs{CoreQuestion{{CoreCandidate{{3, 4, 0, 0, 0}, 2, 5}}},
                               CoreQuestion{{CoreCandidate{{3, 4, 0, 1, 0}, 2, 5}}}};
  std::vector<std::vector<CandidateScore>> out;
  s.score(qs, out);
  EXPECT_TRUE(out[0][0].greedy_match);
  EXPECT_FALSE(out[1][0].greedy_match);
  EXPECT_NEAR(out[0][0].mean_loss, std::log(double(c.vocab_size)), 1e-6);
}

// The cap can merge different raw logits: head rows 3 and 7 along one direction, 7's twice as
// long, both cap to exactly 15 where the activation points that way (rows 11 and 13 the same along
// the opposite direction). The greedy choice is then 3 (the first of the capped maxima), not 7
// (the raw maximum).
TEST(FastScorer, TiesMadeByTheCapGoToTheLowestIndex) {
  const ModelConfig c = small();
  const int64_t C = c.d_model, V = c.vocab_size;
  auto m = random_model(c, cpu_kernels(), 23);
  float* head = m->params().views().lm_head;
  Rng r(4);
  std::fill_n(head, V * C, 0.0f);
  for (int64_t j = 0; j < C; ++j) {
    const float u = float(r.normal());
    head[3 * C + j] = 1000 * u, head[7 * C + j] = 2000 * u;
    head[11 * C + j] = -1000 * u, head[13 * C + j] = -2000 * u;
  }
  // The model's own greedy continuation, decoded with the plain forward.
  CoreCandidate cand{{0}, 1, 24};
  std::vector<float> logits(size_t(c.seq_len * V));
  int merged = -1;  // a position where 3 and 7 (or 11 and 13) tie at the top
  while (cand.tokens.size() < 24) {
    const int n = int(cand.tokens.size());
    m->forward_logits(cand.tokens.data(), 1, n, logits.data());
    const float* z = logits.data() + (n - 1) * V;
    const int32_t best = int32_t(std::max_element(z, z + V) - z);
    if ((best == 3 && z[7] == z[3]) || (best == 11 && z[13] == z[11])) merged = n;
    cand.tokens.push_back(best);
  }
  ASSERT_GE(merged, 0) << "no tie made by the cap";
  CoreCandidate raw = cand;
  raw.tokens[size_t(merged)] = raw.tokens[size_t(merged)] == 3 ? 7 : 13;
  FastScorer s(*m);
  std::vector<std::vector<CandidateScore>> out;
  s.score({CoreQuestion{{cand}}, CoreQuestion{{raw}}}, out);
  EXPECT_TRUE(out[0][0].greedy_match);
  EXPECT_FALSE(out[1][0].greedy_match);
}

// The cached runs: a sequence fed in pieces (several rows after a cache, one row, a piece longer
// than a query block) gives the activations of one whole-sequence run; with every variant, the
// smear's previous token and the windows reach across the pieces.
void expect_cached_pieces_equal_one_run(const ModelConfig& c, uint64_t seed) {
  auto m = random_model(c, cpu_kernels(), seed);
  Rng r(seed + 1);
  const auto tokens = random_tokens(r, c.seq_len, c.vocab_size);
  SegmentForward whole(c, m->params().views(), m->kernels(), m->rope_cos(), m->rope_sin(), c.seq_len);
  const float* ref = whole.run(tokens.data(), {Segment{0, c.seq_len, 0, 0}}, c.seq_len);
  const std::vector<double> expected(ref, ref + c.seq_len * c.d_model);
  SegmentForward pieces(c, m->params().views(), m->kernels(), m->rope_cos(), m->rope_sin(), 12);
  KvCache cache;
  pieces.init_cache(cache);
  int64_t at = 0;
  for (int64_t n : {5, 1, 12, 3, 11}) {
    const float* got = pieces.run_cached(tokens.data() + at, n, cache);
    for (int64_t i = 0; i < n * c.d_model; ++i)
      ASSERT_NEAR(got[i], expected[size_t(at * c.d_model + i)], 1e-4) << "row " << at + i / c.d_model;
    at += n;
  }
  EXPECT_EQ(cache.len, c.seq_len);
}

TEST(SegmentForward, CachedPiecesEqualOneRun) { expect_cached_pieces_equal_one_run(small(), 31); }

TEST(SegmentForward, CachedPiecesEqualOneRunWithEveryVariant) {
  expect_cached_pieces_equal_one_run(variant_configs().back().second, 33);
}

TEST(FastScorer, RefusesCandidatesItCannotScore) {
  const ModelConfig c = small();
  auto m = random_model(c, cpu_kernels(), 15);
  FastScorer s(*m);
  std::vector<std::vector<CandidateScore>> out;
  auto one = [](std::vector<int32_t> tokens, int begin, int end) {
    return std::vector<CoreQuestion>{CoreQuestion{{CoreCandidate{std::move(tokens), begin, end}}}};
  };
  EXPECT_THROW(s.score(one({1, 2, 3}, 0, 3), out), Error);                     // begin 0: no logits before
  EXPECT_THROW(s.score(one({1, 2, 3}, 1, 4), out), Error);                     // past the end
  EXPECT_THROW(s.score(one({1, 99, 3}, 1, 3), out), Error);                    // outside the vocabulary
  EXPECT_THROW(s.score(one(std::vector<int32_t>(33, 1), 1, 33), out), Error);  // longer than the context
  EXPECT_THROW(s.score({CoreQuestion{}}, out), Error);                         // no candidates
  EXPECT_NO_THROW(s.score(one({1, 2, 3}, 1, 3), out));
  // An empty span is no error: a NaN mean loss and no greedy match, as the reference's mean over
  // no positions; its question's other candidates score as usual.
  CoreQuestion q{{CoreCandidate{{1, 2, 3, 4}, 4, 4}, CoreCandidate{{1, 2, 3, 5}, 3, 4}}};
  s.score({q}, out);
  EXPECT_TRUE(std::isnan(out[0][0].mean_loss));
  EXPECT_FALSE(out[0][0].greedy_match);
  EXPECT_NEAR(out[0][1].mean_loss, plain_score(*m, q.candidates[1]).mean_loss, 1e-5 * out[0][1].mean_loss);
}

}  // namespace
}  // namespace nt
