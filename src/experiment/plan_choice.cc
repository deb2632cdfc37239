// SPDX-License-Identifier: MIT
#include "experiment/plan_choice.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/duration.h"

namespace nt::experiment {

PlanChoice choose_plan(const std::vector<PlanCandidate>& candidates, const ScalingLaw& law, const PlanRule& rule) {
  if (!(rule.budget_s > 0) || !std::isfinite(rule.budget_s))
    fail("%s: must be a positive duration", rule.budget_flag.c_str());
  PlanChoice out;
  bool any = false;
  int64_t most_steps = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const PlanCandidate& c = candidates[i];
    PlanPrediction p;
    if (c.step_seconds > 0) {
      p.steps = int64_t(std::floor(rule.budget_s / c.step_seconds));
      p.tokens = double(p.steps) * double(c.step_tokens);
      p.tokens_per_second = double(c.step_tokens) / c.step_seconds;
      p.val_bpb = p.steps > 0 ? law.predict(double(c.params_matmul), p.tokens, rule.unique_tokens) : NAN;
      p.epochs = rule.unique_tokens > 0 ? p.tokens / rule.unique_tokens : 0;
      most_steps = std::max(most_steps, p.steps);
    }
    if (!c.fits_memory)
      p.excluded = "needs more memory than is available";
    else if (c.step_seconds <= 0)
      p.excluded = c.not_timed.empty() ? "not timed" : c.not_timed;
    else if (p.steps < rule.min_steps)
      p.excluded = strf("%lld steps, fewer than %lld", (long long)p.steps, (long long)rule.min_steps);
    out.predictions.push_back(p);
  }
  // The lowest prediction; a tie goes to the smaller model, then the smaller batch.
  for (size_t i = 0; i < candidates.size(); ++i) {
    const PlanPrediction& p = out.predictions[i];
    if (!p.excluded.empty()) continue;
    const PlanPrediction& b = out.predictions[out.best];
    const PlanCandidate &c = candidates[i], &bc = candidates[out.best];
    const bool tie = std::fabs(p.val_bpb - b.val_bpb) <= 1e-12;
    if (!any || p.val_bpb < b.val_bpb - 1e-12 ||
        (tie && (c.params < bc.params || (c.params == bc.params && c.batch_size < bc.batch_size))))
      out.best = i, any = true;
  }
  if (!any)
    fail("%s %s: too short for every candidate shape (the most any would train is %lld steps; at least %lld "
         "are needed)",
         rule.budget_flag.c_str(), format_duration(rule.budget_s).c_str(), (long long)most_steps,
         (long long)rule.min_steps);
  const PlanCandidate& c = candidates[out.best];
  const PlanPrediction& p = out.predictions[out.best];
  out.why = strf("depth %d, d_model %d, batch %d has the lowest predicted val_bpb (%.4f): %lld steps, %s tokens at "
                 "%.0f tokens/s with %s parameters outside the embedding",
                 c.depth, c.d_model, c.batch_size, p.val_bpb, (long long)p.steps, strf("%.3g", p.tokens).c_str(),
                 p.tokens_per_second, strf("%.3g", double(c.params_matmul)).c_str());
  if (p.epochs > 0) out.why += strf(" (%.2g epochs of the training data)", p.epochs);
  return out;
}

}  // namespace nt::experiment
