// SPDX-License-Identifier: MIT
#include "tokenizer/bpe_train.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <queue>
#include <string_view>
#include <unordered_map>

#include "core/check.h"
#include "core/first_error.h"

namespace nt {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline uint64_t pair_key(uint32_t a, uint32_t b) { return uint64_t(a) << 32 | b; }

struct Job {
  int64_t count;
  uint64_t pair;
  // Max-heap: higher count first; on ties the smaller pair first.
  bool operator<(const Job& o) const { return count != o.count ? count < o.count : pair > o.pair; }
};

struct PairHash {
  size_t operator()(uint64_t k) const {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    return size_t(k);
  }
};

}  // namespace

std::unique_ptr<BpeTokenizer> train_bpe(const std::vector<std::string>& docs, const BpeTrainOptions& opt,
                                        BpeTrainStats* stats_out) {
  BpeTrainStats st;
  const uint32_t nspecial = uint32_t(opt.special_tokens.size());
  if (nspecial == 0) fail("--special: at least one special token (the BOS) is required");
  if (opt.vocab_size < 256 + nspecial)
    fail("--vocab-size %u: must be at least 256 bytes + %u special tokens", opt.vocab_size, nspecial);
  PreTokenizer pre(opt.pattern);  // validates the pattern before any work
  const uint32_t target = opt.vocab_size - nspecial;

  // 1. Distinct pieces and their counts (views into docs).
  auto t0 = Clock::now();
  using Counts = std::unordered_map<std::string_view, uint64_t>;
  const int nthreads = omp_get_max_threads();
  std::vector<Counts> local;
  local.resize(size_t(nthreads));
  std::vector<uint64_t> local_pieces(size_t(nthreads), 0);
  FirstError error;  // a pattern that gives up on a text
#pragma omp parallel
  {
    const int t = omp_get_thread_num();
    Counts& c = local[size_t(t)];
#pragma omp for schedule(dynamic, 16)
    for (size_t d = 0; d < docs.size(); ++d) {
      if (error.failed()) continue;
      error.run([&] {
        PreTokenizer::Iterator it(pre, docs[d]);
        std::string_view piece;
        bool raw;
        while (it.next(&piece, &raw)) {
          ++c[piece];
          ++local_pieces[size_t(t)];
        }
      });
    }
  }
  error.rethrow();
  Counts& all = local[0];
  for (size_t t = 1; t < local.size(); ++t) {
    for (const auto& [k, v] : local[t]) all[k] += v;
    Counts().swap(local[t]);
  }
  for (const auto& d : docs) st.bytes += d.size();
  for (auto n : local_pieces) st.pieces += n;
  std::vector<std::pair<std::string_view, uint64_t>> uniq(all.begin(), all.end());
  Counts().swap(all);
  std::sort(uniq.begin(), uniq.end());
  st.unique_pieces = uniq.size();
  st.split_seconds = since(t0);

  // 2. Merges.
  auto t1 = Clock::now();
  std::vector<std::vector<uint32_t>> words(uniq.size());
  std::vector<int64_t> wcount(uniq.size());
  std::unordered_map<uint64_t, int64_t, PairHash> counts;
  std::unordered_map<uint64_t, std::vector<uint32_t>, PairHash> where;
  for (size_t w = 0; w < uniq.size(); ++w) {
    const auto& [piece, c] = uniq[w];
    auto& ids = words[w];
    ids.reserve(piece.size());
    for (unsigned char b : piece) ids.push_back(b);
    wcount[w] = int64_t(c);
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const uint64_t k = pair_key(ids[i], ids[i + 1]);
      counts[k] += int64_t(c);
      auto& v = where[k];
      if (v.empty() || v.back() != w) v.push_back(uint32_t(w));
    }
  }
  std::priority_queue<Job> heap;
  {
    std::vector<Job> jobs;
    jobs.reserve(counts.size());
    for (const auto& [k, c] : counts) jobs.push_back({c, k});
    heap = std::priority_queue<Job>(std::less<Job>(), std::move(jobs));
  }
  std::vector<std::string> tokens(256);
  for (int b = 0; b < 256; ++b) tokens[size_t(b)] = std::string(1, char(b));
  std::unordered_map<std::string, uint32_t> by_bytes;
  for (uint32_t b = 0; b < 256; ++b) by_bytes[tokens[b]] = b;

  std::vector<std::pair<uint64_t, int64_t>> deltas;
  std::vector<uint64_t> grown;
  std::vector<uint32_t> merged;
  while (tokens.size() < target && !heap.empty()) {
    const Job job = heap.top();
    heap.pop();
    auto cit = counts.find(job.pair);
    const int64_t now = cit == counts.end() ? 0 : cit->second;
    if (now <= 0) continue;
    if (now != job.count) {
      heap.push({now, job.pair});
      continue;
    }
    const uint32_t a = uint32_t(job.pair >> 32), b = uint32_t(job.pair);
    std::string bytes = tokens[a] + tokens[b];
    uint32_t id;
    if (auto e = by_bytes.find(bytes); e != by_bytes.end()) {
      id = e->second;
    } else {
      id = uint32_t(tokens.size());
      by_bytes.emplace(bytes, id);
      tokens.push_back(std::move(bytes));
    }
    auto wit = where.find(job.pair);
    std::vector<uint32_t> ws = std::move(wit->second);
    where.erase(wit);
    std::sort(ws.begin(), ws.end());
    ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
    grown.clear();
    for (uint32_t w : ws) {
      auto& ids = words[w];
      const size_t n = ids.size();
      if (n < 2) continue;
      deltas.clear();
      merged.clear();
      for (size_t i = 0; i < n;) {
        if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
          if (!merged.empty()) {
            const uint32_t x = merged.back();
            deltas.push_back({pair_key(x, a), -1});
            deltas.push_back({pair_key(x, id), 1});
          }
          deltas.push_back({job.pair, -1});
          if (i + 2 < n) {
            const uint32_t y = ids[i + 2];
            deltas.push_back({pair_key(b, y), -1});
            deltas.push_back({pair_key(id, y), 1});
          }
          merged.push_back(id);
          i += 2;
        } else {
          merged.push_back(ids[i]);
          ++i;
        }
      }
      if (deltas.empty()) continue;
      ids.swap(merged);
      const int64_t c = wcount[w];
      for (const auto& [k, d] : deltas) {
        counts[k] += d * c;
        if (d > 0) {
          auto& v = where[k];
          if (v.empty() || v.back() != w) v.push_back(w);
          grown.push_back(k);
        }
      }
    }
    counts.erase(job.pair);
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (uint64_t k : grown) {
      const int64_t c = counts[k];
      if (c > 0) heap.push({c, k});
    }
    if (opt.on_merge) opt.on_merge(uint32_t(tokens.size() - 256), target - 256);
  }
  st.merges = uint32_t(tokens.size() - 256);
  st.merge_seconds = since(t1);

  std::vector<std::pair<std::string, uint32_t>> specials;
  for (uint32_t i = 0; i < nspecial; ++i) specials.push_back({opt.special_tokens[i], uint32_t(tokens.size()) + i});
  const uint32_t vocab = uint32_t(tokens.size()) + nspecial;
  auto tok = std::make_unique<BpeTokenizer>(opt.name, opt.pattern, std::move(tokens), std::move(specials),
                                            opt.special_tokens[0], vocab, "trained tokenizer");
  if (stats_out) *stats_out = st;
  return tok;
}

}  // namespace nt
