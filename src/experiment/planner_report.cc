// SPDX-License-Identifier: MIT
// What `nanotrain plan` prints: the candidates' table and the choice, or the same as JSON.
#include <cmath>

#include "core/check.h"
#include "core/duration.h"
#include "experiment/planner.h"

namespace nt::experiment {

namespace {

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string args_text(const PlanCandidate& c) {
  std::string s;
  for (const std::string& a : plan_train_args(c)) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

nlohmann::json plan_report_json(const PlanReport& r) {
  nlohmann::json cands = nlohmann::json::array();
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const PlanCandidate& c = r.candidates[i];
    const PlanPrediction& p = r.choice.predictions[i];
    cands.push_back({{"depth", c.depth},
                     {"d_model", c.d_model},
                     {"head_dim", c.head_dim},
                     {"seq_len", c.seq_len},
                     {"batch_size", c.batch_size},
                     {"params", c.params},
                     {"params_matmul", c.params_matmul},
                     {"memory_bytes", c.memory_bytes},
                     {"step_seconds", c.step_seconds > 0 ? nlohmann::json(c.step_seconds) : nlohmann::json(nullptr)},
                     {"tokens_per_second", p.tokens_per_second > 0 ? nlohmann::json(p.tokens_per_second) : nullptr},
                     {"steps", p.steps},
                     {"tokens", p.tokens},
                     {"epochs", p.epochs},
                     {"predicted_val_bpb", number_or_null(p.val_bpb)},
                     {"excluded", p.excluded.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.excluded)},
                     {"chosen", i == r.choice.best}});
  }
  const PlanCandidate& c = r.chosen();
  const PlanPrediction& p = r.choice.predictions[r.choice.best];
  return {{"schema", "nanotrain-plan/1"},
          {"budget_seconds", r.budget_s},
          {"min_steps", r.min_steps},
          {"machine", r.machine},
          {"kernels", r.kernels},
          {"dtype", r.dtype},
          {"threads", r.threads},
          {"data_train_tokens", r.unique_tokens},
          {"measure_seconds", r.measure_seconds},
          {"core_share", r.core_share},
          {"machine_was_busy", r.machine_was_busy()},
          {"law",
           {{"E", r.law.E}, {"A", r.law.A}, {"alpha", r.law.alpha}, {"B", r.law.B}, {"beta", r.law.beta},
            {"C", r.law.C}, {"source", r.law_source}}},
          {"candidates", cands},
          {"choice",
           {{"depth", c.depth},
            {"d_model", c.d_model},
            {"head_dim", c.head_dim},
            {"batch_size", c.batch_size},
            {"params", c.params},
            {"tokens", p.tokens},
            {"epochs", p.epochs},
            {"steps", p.steps},
            {"predicted_val_bpb", p.val_bpb},
            {"train_args", plan_train_args(c)},
            {"why", r.choice.why}}}};
}

std::string plan_report_text(const PlanReport& r) {
  std::string s = strf("plan for a training budget of %s on %s (%s, %s, %d threads; timing took %.1fs)\n",
                       format_duration(r.budget_s).c_str(), r.machine.c_str(), r.kernels.c_str(), r.dtype.c_str(),
                       r.threads, r.measure_seconds);
  s += strf("rule: val_bpb = %.4g + %.4g / N^%.3f + %.4g / D^%.3f + %.4g x epochs past the first (%s); at least "
            "%lld steps; the training data: %s tokens\n",
            r.law.E, r.law.A, r.law.alpha, r.law.B, r.law.beta, r.law.C, r.law_source.c_str(), (long long)r.min_steps,
            strf("%.3gM", r.unique_tokens / 1e6).c_str());
  s += strf("  %5s %7s %5s %9s %9s %10s %7s %10s %6s %9s  %s\n", "depth", "d_model", "batch", "params", "N",
            "tokens/s", "steps", "tokens", "epochs", "val_bpb", "");
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const PlanCandidate& c = r.candidates[i];
    const PlanPrediction& p = r.choice.predictions[i];
    const std::string bpb = std::isfinite(p.val_bpb) ? strf("%.4f", p.val_bpb) : "-";
    const std::string note = i == r.choice.best ? "<- chosen" : p.excluded.empty() ? "" : "(" + p.excluded + ")";
    s += strf("  %5d %7d %5d %9s %9s %10s %7s %10s %6s %9s  %s\n", c.depth, c.d_model, c.batch_size,
              strf("%.3gM", double(c.params) / 1e6).c_str(), strf("%.3gM", double(c.params_matmul) / 1e6).c_str(),
              p.tokens_per_second > 0 ? strf("%.0f", p.tokens_per_second).c_str() : "-",
              c.step_seconds > 0 ? strf("%lld", (long long)p.steps).c_str() : "-",
              p.tokens > 0 ? strf("%.3gM", p.tokens / 1e6).c_str() : "-",
              p.epochs > 0 ? strf("%.2f", p.epochs).c_str() : "-", bpb.c_str(), note.c_str());
  }
  s += "choice: " + r.choice.why + "\n";
  if (r.machine_was_busy()) s += "warning: " + r.busy_note() + "\n";
  s += "train it with: nanotrain train " + args_text(r.chosen()) + " --time-budget " + format_duration(r.budget_s) +
       "\n";
  return s;
}

}  // namespace nt::experiment
