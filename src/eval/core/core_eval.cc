// SPDX-License-Identifier: MIT
#include "eval/core/core_eval.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "eval/core/render.h"

namespace nt {

double centered_accuracy(double accuracy, double baseline_percent) {
  const double b = 0.01 * baseline_percent;
  return (accuracy - b) / (1.0 - b);
}

double core_score(const std::vector<CoreTaskResult>& tasks) {
  if (tasks.empty()) return 0;
  double sum = 0;
  for (const auto& t : tasks) sum += t.centered;
  return sum / double(tasks.size());
}

int choose_candidate(const std::vector<CandidateScore>& scores) {
  int best = 0;
  for (size_t i = 1; i < scores.size(); ++i)
    if (scores[i].mean_loss < scores[size_t(best)].mean_loss) best = int(i);
  return best;
}

namespace {

struct PendingItem {
  int64_t line = 0;
  int gold = 0;
};

// Renders and tokenizes the task's items [begin, end) (a chunk at a time, so that a large task's
// token sequences never all exist at once); an item the reference cannot score is an error
// naming its line, or with skip_bad is reported and left out.
void build_task_questions(const CoreTask& task, const std::vector<CoreItem>& items, int64_t begin, int64_t end,
                          int shots, const Tokenizer& tok, int max_len, const CoreEvalOptions& opt,
                          std::vector<CoreQuestion>& qs, std::vector<PendingItem>& pending, int64_t& skipped) {
  const int64_t n = int64_t(items.size());
  qs.clear();
  pending.clear();
  for (int64_t idx = begin; idx < end; ++idx) {
    const CoreItem& it = items[size_t(idx)];
    std::vector<const CoreItem*> shot_items;
    if (shots > 0)
      for (int64_t p : select_shots(idx, n, shots)) shot_items.push_back(&items[size_t(p)]);
    try {
      qs.push_back(build_question(task.type, render_prompts(task.type, task.delimiter, it, shot_items), tok, max_len));
      pending.push_back({it.line, it.gold});
    } catch (const Error& e) {
      const std::string msg =
          strf("%s:%lld: task '%s': %s", task.path.c_str(), (long long)it.line, task.label.c_str(), e.what());
      if (!opt.skip_bad) throw Error(msg);
      ++skipped;
      if (opt.on_skip) opt.on_skip("skipped " + msg);
    }
  }
}

}  // namespace

CoreResult evaluate_core(const CoreBundle& bundle, const Tokenizer& tok, int max_len, CoreScorer& scorer,
                         const CoreEvalOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  CoreResult r;
  std::vector<std::vector<CoreItem>> chosen;
  int64_t all_total = 0, all_done = 0;
  for (const auto& t : bundle.tasks) {
    chosen.push_back(select_items(t.items, opt.max_per_task));
    all_total += int64_t(chosen.back().size());
  }
  for (size_t ti = 0; ti < bundle.tasks.size(); ++ti) {
    const CoreTask& task = bundle.tasks[ti];
    const auto t0 = std::chrono::steady_clock::now();
    const ScorerStats stats0 = scorer.stats();
    CoreTaskResult tr;
    tr.label = task.label;
    tr.type = task.type;
    tr.baseline = task.baseline;
    tr.shots_requested = task.shots;
    const int64_t n = int64_t(chosen[ti].size());
    tr.shots = int(std::min<int64_t>(task.shots, n - 1));
    std::vector<CoreQuestion> qs;
    std::vector<PendingItem> pending;
    std::vector<std::vector<CandidateScore>> scores;
    const int64_t chunk = std::max(1, opt.chunk_questions);
    for (int64_t b = 0; b < n; b += chunk) {
      const int64_t e = std::min(n, b + chunk);
      const int64_t skipped_before = tr.skipped;
      build_task_questions(task, chosen[ti], b, e, tr.shots, tok, max_len, opt, qs, pending, tr.skipped);
      if (!qs.empty()) scorer.score(qs, scores);
      for (size_t i = 0; i < qs.size(); ++i) {
        const PendingItem& p = pending[i];
        CoreDecision d{p.line, 0, false};
        if (task.type == CoreTaskType::kLanguageModeling)
          d.correct = scores[i][0].greedy_match;
        else
          d.correct = (d.predicted = choose_candidate(scores[i])) == p.gold;
        tr.correct += d.correct;
        tr.decisions.push_back(d);
      }
      all_done += int64_t(qs.size()) + tr.skipped - skipped_before;
      if (opt.on_progress) opt.on_progress(task.label, e, n, all_done, all_total);
    }
    if (tr.decisions.empty()) fail("%s: task '%s' has no item left to score", task.path.c_str(), task.label.c_str());
    tr.items = int64_t(tr.decisions.size());
    tr.accuracy = double(tr.correct) / double(tr.items);
    tr.centered = centered_accuracy(tr.accuracy, tr.baseline);
    tr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const ScorerStats stats1 = scorer.stats();
    tr.stats = {stats1.tokens_run - stats0.tokens_run, stats1.flops_run - stats0.flops_run,
                stats1.flops_plain - stats0.flops_plain};
    r.examples += tr.items;
    r.tasks.push_back(std::move(tr));
  }
  r.core = core_score(r.tasks);
  r.stats = scorer.stats();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return r;
}

}  // namespace nt
