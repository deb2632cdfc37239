// SPDX-License-Identifier: MIT
#include "experiment/plan_check.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/duration.h"
#include "experiment/sweep_runner.h"

namespace nt::experiment {

namespace {

// The choice first, then the other candidates that could be chosen, by predicted val_bpb.
std::vector<size_t> check_candidates(const PlanReport& r, int n) {
  std::vector<size_t> order(r.candidates.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const auto& pred = r.choice.predictions;
  order.erase(std::remove_if(order.begin(), order.end(),
                             [&](size_t i) { return i == r.choice.best || !pred[i].excluded.empty(); }),
              order.end());
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a].val_bpb < pred[b].val_bpb; });
  order.insert(order.begin(), r.choice.best);
  if (int(order.size()) > n) order.resize(size_t(n));
  return order;
}

}  // namespace

PlanCheck check_plan(const PlanReport& r, const TrainConfig& base, const PlanCheckOptions& o) {
  if (o.runs < 2) fail("--check-runs %d: must be at least 2 (the choice and one alternative)", o.runs);
  const std::vector<size_t> picked = check_candidates(r, o.runs);
  SweepSpec spec;
  for (size_t i : picked) {
    const PlanCandidate& c = r.candidates[i];
    std::vector<std::string> args = plan_train_args(c);
    args.push_back("--time-budget=" + format_duration(o.budget_s));
    spec.variants.push_back({strf("d%d-w%d-b%d", c.depth, c.d_model, c.batch_size), args});
  }
  std::vector<SweepRun> runs;
  for (PlannedRun& p : expand_sweep(spec, base.seed)) {
    SweepRun run{p, base};
    run.cfg.time_budget = format_duration(o.budget_s);
    run.cfg.sample_tokens = 0;
    run.cfg.run_dir.clear();
    apply_plan(run.cfg, r.candidates[picked[runs.size()]]);
    runs.push_back(std::move(run));
  }
  SweepStatus status = run_sweep(runs, sweep_plan_json(spec, runs), SweepOptions{o.out, o.verbose, o.quiet});
  PlanCheck out;
  out.out = o.out;
  for (size_t k = 0; k < picked.size(); ++k) {
    const RunStatus& s = status.run(k);
    PlanCheckRow row{picked[k], s.name, s.state, r.choice.predictions[picked[k]].val_bpb, s.val_bpb};
    if (s.state != "done") ++out.failed;
    out.rows.push_back(row);
  }
  for (size_t k = 0; k < out.rows.size(); ++k)
    if (std::isfinite(out.rows[k].measured) &&
        (!std::isfinite(out.rows[out.best].measured) || out.rows[k].measured < out.rows[out.best].measured))
      out.best = k;
  const double choice = out.rows[0].measured, best = out.rows[out.best].measured;
  out.gap = std::isfinite(choice) && std::isfinite(best) ? (choice - best) / best : NAN;
  out.within = std::isfinite(out.gap) && out.gap <= o.tolerance;
  return out;
}

nlohmann::json plan_check_json(const PlanCheck& c, double tolerance) {
  nlohmann::json rows = nlohmann::json::array();
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  for (const PlanCheckRow& r : c.rows)
    rows.push_back({{"name", r.name}, {"state", r.state}, {"predicted_val_bpb", num(r.predicted)},
                    {"val_bpb", num(r.measured)}});
  return {{"out", c.out},         {"runs", rows},         {"best", c.rows[c.best].name},
          {"gap", num(c.gap)},    {"tolerance", tolerance}, {"within_tolerance", c.within},
          {"failed", c.failed}};
}

std::string plan_check_text(const PlanCheck& c, double tolerance) {
  std::string s = strf("check (%s): the choice and the candidates ranked next, trained\n", c.out.c_str());
  s += strf("  %-20s %-8s %10s %10s\n", "run", "state", "predicted", "val_bpb");
  for (const PlanCheckRow& r : c.rows)
    s += strf("  %-20s %-8s %10.4f %10s\n", r.name.c_str(), r.state.c_str(), r.predicted,
              std::isfinite(r.measured) ? strf("%.4f", r.measured).c_str() : "-");
  if (!std::isfinite(c.gap))
    s += "the choice's run did not finish: no verdict\n";
  else
    s += strf("the choice is %.2f %% behind the best run (%s); tolerance %.2f %%: %s\n", 100 * c.gap,
              c.rows[c.best].name.c_str(), 100 * tolerance, c.within ? "verified" : "NOT verified");
  return s;
}

}  // namespace nt::experiment
