// SPDX-License-Identifier: MIT
// CORE over a bundle: per task, the items chosen and rendered as the reference harness does
// (render.h), scored by a CoreScorer; accuracy, the accuracy centered on the task's random
// baseline, and CORE, the mean of the centered accuracies of the tasks run.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/core/bundle.h"
#include "eval/core/scorer.h"
#include "tokenizer/tokenizer.h"

namespace nt {

struct CoreEvalOptions {
  int64_t max_per_task = 0;  // the first N items after the seeded shuffle (0: all)
  bool skip_bad = false;     // an item the reference cannot score is reported and left out
  std::function<void(const std::string&)> on_skip;
  // After each chunk of questions: the task, items done in it, its items, and over all tasks.
  std::function<void(const std::string& task, int64_t done, int64_t total, int64_t all_done, int64_t all_total)>
      on_progress;
  int chunk_questions = 256;  // questions handed to the scorer at once (enough to keep its batches full)
};

// The decision on one item (its position after the shuffle and cut).
struct CoreDecision {
  int64_t line = 0;   // line in the task's JSONL file
  int predicted = 0;  // the chosen candidate (language modeling: 0)
  bool correct = false;
};

struct CoreTaskResult {
  std::string label;
  CoreTaskType type = CoreTaskType::kMultipleChoice;
  int shots = 0, shots_requested = 0;  // fewer when the task has no more other items
  int64_t items = 0, correct = 0, skipped = 0;
  double accuracy = 0, centered = 0, baseline = 0;  // baseline in percent
  double seconds = 0;
  ScorerStats stats;  // the scorer's work on this task's items
  std::vector<CoreDecision> decisions;
};

struct CoreResult {
  std::vector<CoreTaskResult> tasks;
  double core = 0;
  double seconds = 0;
  int64_t examples = 0;  // items scored
  ScorerStats stats;
};

// (acc - b/100) / (1 - b/100), with b the random baseline in percent.
double centered_accuracy(double accuracy, double baseline_percent);
// The mean of the centered accuracies (0 for none).
double core_score(const std::vector<CoreTaskResult>& tasks);
// The reference's choice among candidates: the lowest mean loss, the first on ties; a NaN is never
// lower than anything, so it wins only as the first candidate (Python's min over a list).
int choose_candidate(const std::vector<CandidateScore>& scores);

// max_len: the model's context (longer sequences keep their last max_len tokens).
CoreResult evaluate_core(const CoreBundle& bundle, const Tokenizer& tok, int max_len, CoreScorer& scorer,
                         const CoreEvalOptions& opt = {});

}  // namespace nt
