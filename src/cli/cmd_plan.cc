// SPDX-License-Identifier: MIT
// `nanotrain plan`: which model to train in a time budget on this machine (experiment/planner.h);
// `plan --fit RUN...` fits the scaling law it decides by to measured runs (experiment/scaling_law.h).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "core/check.h"
#include "core/duration.h"
#include "core/files.h"
#include "core/system.h"
#include "experiment/plan_check.h"
#include "experiment/planner.h"
#include "experiment/scaling_law.h"
#include "train/trainer.h"

namespace nt::cli {

namespace {

using namespace nt::experiment;

struct PlanFlags {
  std::string budget, shapes, coefficients, out = "scaling_law.json", check_out = "plan-check", check_budget;
  std::vector<std::string> fit;
  int64_t min_steps = 300;
  int check_runs = 5;
  double tolerance = 1.0;  // percent
  bool json = false, check = false, quiet = false;
  TrainConfig base;  // --data, --device, --dtype, --seq-len, --threads
};

double parse_budget(const std::string& flag, const std::string& text) {
  const auto s = parse_duration(text);
  if (!s) fail("%s %s: expected a positive duration such as 90s, 5m, 1h", flag.c_str(), text.c_str());
  return *s;
}

void run_fit(const PlanFlags& f) {
  std::vector<std::string> skipped;
  const std::vector<FitPoint> points = load_fit_points(f.fit, skipped);
  for (const std::string& s : skipped) std::fprintf(stderr, "plan --fit: skipped %s\n", s.c_str());
  const ScalingFit fit = fit_scaling_law(points);
  const std::string source = strf("fit by nanotrain plan --fit to %zu finished runs", points.size());
  const nlohmann::json j = scaling_law_json(fit, points, source, utc_time("%Y-%m-%d"));
  write_file_atomic(f.out, j.dump(2) + "\n");
  if (f.json) return (void)std::printf("%s\n", j.dump(2).c_str());
  const ScalingLaw& l = fit.law;
  size_t repeated = 0, unknown = 0;
  for (const FitPoint& p : points)
    repeated += repeated_epochs(p.tokens, p.unique_tokens) > 0, unknown += p.unique_tokens == 0;
  std::printf("val_bpb = %.4g + %.4g / N^%.3f + %.4g / D^%.3f + %.4g x epochs past the first, over %zu runs (%zu "
              "repeated their data): rmse %.4f, largest error %.4f%s\n",
              l.E, l.A, l.alpha, l.B, l.beta, l.C, points.size(), repeated, fit.rmse, fit.max_abs_error,
              fit.at_bound ? " (an exponent is at the edge of its range: the runs hardly constrain it)" : "");
  if (repeated == 0)
    std::printf("no run trained past one epoch of its data, so the repetition term stays 0%s\n",
                unknown > 0 ? strf(" (%zu runs' data size is unknown: their data folder is not where their config "
                                   "says)", unknown).c_str() : "");
  std::printf("written: %s\n", f.out.c_str());
}

void run_plan(const PlanFlags& f) {
  if (f.budget.empty()) fail("--budget: required (the training time to plan for, e.g. 30m), or --fit RUN...");
  PlannerOptions opt;
  opt.budget_s = parse_budget("--budget", f.budget);
  opt.min_steps = f.min_steps;
  if (!f.shapes.empty()) opt.shapes = parse_plan_shapes(f.shapes);
  if (!f.quiet) opt.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const ScalingLaw law = f.coefficients.empty()
                             ? scaling_law_from_json(default_scaling_law_json(), "shipped coefficients")
                             : read_scaling_law(f.coefficients);
  const PlanReport r = plan_training(f.base, law, f.coefficients.empty() ? "shipped" : f.coefficients, opt);
  nlohmann::json j = plan_report_json(r);
  if (!f.json) std::printf("%s", plan_report_text(r).c_str()), std::fflush(stdout);
  if (!f.check) {
    if (f.json) std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  PlanCheckOptions co;
  co.out = f.check_out, co.runs = f.check_runs, co.tolerance = f.tolerance / 100, co.quiet = f.quiet || f.json;
  co.budget_s = f.check_budget.empty() ? opt.budget_s : parse_budget("--check-budget", f.check_budget);
  try {
    const PlanCheck c = check_plan(r, f.base, co);
    j["check"] = plan_check_json(c, co.tolerance);
    if (f.json) std::printf("%s\n", j.dump(2).c_str());
    else std::printf("%s", plan_check_text(c, co.tolerance).c_str());
    if (c.failed > 0) throw ExitCode{3};
    if (!c.within) throw ExitCode{4};
  } catch (const Interrupted& stop) {
    std::fprintf(stderr, "nanotrain: %s; continue the check with: nanotrain sweep --out %s\n", stop.message.c_str(),
                 co.out.c_str());
    throw ExitCode{128 + stop.signal};
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  auto* c = app.add_subcommand(
      "plan",
      "Which model to train in --budget on this machine: times a few steps of candidate shapes, predicts the tokens "
      "each trains and its val_bpb by the scaling law, and picks the best. --fit RUN... fits the law to finished runs "
      "instead. Exit codes: 0 done, 1 bad input or no shape fits the budget, 2 usage, 3 --check runs failed, 4 "
      "--check found a run more than --check-tolerance better than the choice");
  c->add_option("--budget", f->budget, "Training time to plan for (as train --time-budget counts it): 90s, 5m, 1h");
  c->add_option("--shapes", f->shapes, "Candidate shapes DEPTHxD_MODEL,... (default: 9 around the presets)");
  c->add_option("--coefficients", f->coefficients, "Scaling-law file to decide by (default: the shipped one)");
  c->add_option("--min-steps", f->min_steps, "Fewest optimizer steps a choice must train")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  c->add_option("--fit", f->fit, "Fit the scaling law to the finished runs in these folders (as `runs` finds them)")
      ->expected(1, -1);
  c->add_option("--out", f->out, "With --fit: the coefficients file to write")->capture_default_str();
  c->add_flag("--check", f->check, "Train the choice and the candidates ranked next as a sweep, and compare");
  c->add_option("--check-out", f->check_out, "With --check: the sweep folder")->capture_default_str();
  c->add_option("--check-runs", f->check_runs, "With --check: runs, the choice included")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  c->add_option("--check-budget", f->check_budget, "With --check: each run's budget (default --budget)");
  c->add_option("--check-tolerance", f->tolerance, "With --check: percent the choice may be behind the best run")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  c->add_flag("--json", f->json, "Print the plan (schema nanotrain-plan/1) or the fit as JSON");
  c->add_flag("--quiet", f->quiet, "No progress lines");
  c->add_option("--data", f->base.data_dir, "Prepared data folder (its tokenizer fixes the vocabulary)")
      ->capture_default_str();
  c->add_option("--device", f->base.device, "Backend: cpu, ref")->capture_default_str();
  c->add_option("--dtype", f->base.dtype, "bf16 | fp32 (default: the backend's)");
  c->add_option("--seq-len", f->base.shape.seq_len, "Sequence length of every candidate (default the cpu preset's)")
      ->check(positive_validator());
  c->add_option("--threads", f->base.threads, "Threads (0 = all cores)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->callback([f] {
    if (!f->fit.empty() && (!f->budget.empty() || f->check))
      fail("--fit: fits the scaling law only; plan with --budget (and --check) in another call");
    f->fit.empty() ? run_plan(*f) : run_fit(*f);
  });
}

}  // namespace nt::cli
