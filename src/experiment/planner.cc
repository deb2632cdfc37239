// SPDX-License-Identifier: MIT
#include "experiment/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/check.h"
#include "core/system.h"
#include "data/dataset.h"
#include "train/default_data.h"
#include "train/step_timing.h"
#include "train/train_plan.h"

namespace nt::experiment {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A step split into its two costs: forward + backward grows with the batch, the optimizer does not.
struct StepTiming {
  double per_sequence_s = 0, optimizer_s = 0;
  double step_seconds(int batch) const { return per_sequence_s * batch + optimizer_s; }
};

// One warm-up step, then `steps` timed ones on fixed tokens, as `nanotrain bench` times a step.
StepTiming time_steps(const TrainPlan& p, int batch, int steps) {
  const TimedSteps t = time_training_steps(p.model, *p.kernels, p.prec, p.optim, batch, steps);
  return {median(t.forward_backward_s) / batch, median(t.optimizer_s)};
}

TrainConfig candidate_config(const TrainConfig& base, int depth, int width, int batch) {
  TrainConfig cfg = base;
  cfg.shape.preset = "cpu";
  cfg.shape.depth = depth, cfg.shape.d_model = width, cfg.shape.head_dim = 64;
  cfg.shape.n_head = 0, cfg.shape.n_kv_head = 0;
  cfg.batch_size = batch, cfg.total_batch_tokens = 0, cfg.steps = 0;
  return cfg;
}

}  // namespace

std::vector<std::pair<int, int>> plan_shapes() {
  // nanochat's line (d_model = 64 x depth) from the tiny end to past the cpu preset (depth 4,
  // 256); a narrower and a wider model at depths 4 and 6; and beside the small end, where short
  // budgets on a CPU land, one layer more and one width more than depth 2's.
  return {{2, 128}, {3, 128}, {2, 192}, {3, 192}, {4, 192}, {4, 256},
          {5, 320}, {4, 384}, {6, 256}, {6, 384}, {8, 512}};
}

std::vector<std::pair<int, int>> parse_plan_shapes(const std::string& text) {
  std::vector<std::pair<int, int>> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, end - at);
    int depth = 0, width = 0, used = 0;
    if (std::sscanf(part.c_str(), "%dx%d%n", &depth, &width, &used) != 2 || used != int(part.size()) || depth < 1 ||
        depth > 64 || width < 64 || width > 8192 || width % 64 != 0)
      fail("--shapes %s: expected DEPTHxD_MODEL pairs such as 4x256 (depth 1 to 64, d_model a multiple of 64 up to "
           "8192), separated by commas",
           text.c_str());
    out.push_back({depth, width});
    at = end + 1;
  }
  return out;
}

std::vector<std::string> plan_train_args(const PlanCandidate& c) {
  return {"--preset=cpu", strf("--depth=%d", c.depth), strf("--d-model=%d", c.d_model),
          strf("--head-dim=%d", c.head_dim), strf("--batch-size=%d", c.batch_size)};
}

void apply_plan(TrainConfig& cfg, const PlanCandidate& c) {
  const TrainConfig planned = candidate_config(cfg, c.depth, c.d_model, c.batch_size);
  cfg.shape = planned.shape, cfg.batch_size = planned.batch_size, cfg.total_batch_tokens = 0;
}

PlanReport plan_training(const TrainConfig& base, const ScalingLaw& law, const std::string& law_source,
                         const PlannerOptions& opt) {
  const auto t0 = Clock::now();
  PlanReport r;
  r.law = law, r.law_source = law_source, r.budget_s = opt.budget_s, r.min_steps = opt.min_steps;
  if (base.data_dir == kDefaultDataDir) ensure_default_data(!opt.progress);
  const Dataset ds = open_dataset(base.data_dir);
  r.unique_tokens = double(ds.train_tokens());
  const std::vector<std::pair<int, int>> shapes = opt.shapes.empty() ? plan_shapes() : opt.shapes;
  const int measure_batch = opt.batches.front();
  double fastest_flop_rate = 0;  // FLOP/s of the shapes measured so far
  double timed_cpu_s = 0, timed_wall_s = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const auto [depth, width] = shapes[s];
    TrainPlan p = plan_settings(candidate_config(base, depth, width, measure_batch));
    plan_model(p, *ds.tokenizer);
    if (r.machine.empty()) r.machine = p.machine, r.kernels = p.kernels->name, r.dtype = precision_name(p.prec);
    r.threads = p.threads;
    // The step estimated from the best FLOP rate so far; larger shapes run at a higher rate, so
    // only a shape twice as slow as that is taken to be too slow without timing it.
    const double est_s = fastest_flop_rate > 0 ? p.flops_per_token * double(p.B * p.T) / fastest_flop_rate : 0;
    std::string not_timed;
    if (p.memory.available > 0 && double(p.memory.need()) > 0.9 * double(p.memory.available))
      not_timed = "needs more memory than is available";
    else if (0.5 * est_s * double(opt.min_steps) > opt.budget_s)
      not_timed = "estimated too slow for the budget";
    else if (since(t0) + est_s * (1 + opt.timed_steps) > opt.time_limit_s)
      not_timed = strf("not timed: the timing's limit of %.0f s was reached", opt.time_limit_s);
    StepTiming t;
    if (not_timed.empty()) {
      if (opt.progress)
        opt.progress(strf("plan: timing %zu/%zu: depth %d, d_model %d (%d warm-up + %d steps of batch %d)", s + 1,
                          shapes.size(), depth, width, 1, opt.timed_steps, measure_batch));
      const auto w0 = Clock::now();
      const double cpu0 = process_cpu_seconds();
      t = time_steps(p, measure_batch, opt.timed_steps);
      timed_cpu_s += process_cpu_seconds() - cpu0, timed_wall_s += since(w0);
      const double sec = t.step_seconds(measure_batch);
      fastest_flop_rate = std::max(fastest_flop_rate, p.flops_per_token * double(p.B * p.T) / sec);
    }
    for (int b : opt.batches) {
      TrainPlan pb = plan_settings(candidate_config(base, depth, width, b));
      plan_model(pb, *ds.tokenizer);
      PlanCandidate c;
      c.depth = depth, c.d_model = width, c.head_dim = pb.model.head_dim, c.seq_len = pb.T, c.batch_size = b;
      c.params = pb.n_params, c.params_matmul = pb.n_matmul, c.step_tokens = pb.step_tokens;
      c.memory_bytes = pb.memory.need();
      c.fits_memory = pb.memory.available == 0 || double(pb.memory.need()) <= 0.9 * double(pb.memory.available);
      c.step_seconds = t.per_sequence_s > 0 ? t.step_seconds(b) : 0;
      c.not_timed = not_timed;
      r.candidates.push_back(c);
    }
  }
  r.measure_seconds = since(t0);
  if (timed_wall_s > 0 && r.threads > 0) r.core_share = std::min(1.0, timed_cpu_s / (timed_wall_s * r.threads));
  try {
    r.choice = choose_plan(r.candidates, law, PlanRule{opt.budget_s, opt.min_steps, opt.budget_flag, r.unique_tokens});
  } catch (const Error& e) {
    if (!r.machine_was_busy()) throw;
    fail("%s; %s", e.what(), r.busy_note().c_str());
  }
  return r;
}

// On an idle machine the threads ran 81-84 % of the timing's wall time (the rest is one thread
// setting up each shape) on 2 cores of a Zen 5; beside one busy program, 61 %; beside two, 43 %.
bool PlanReport::machine_was_busy() const { return core_share < 0.7; }

std::string PlanReport::busy_note() const {
  if (!machine_was_busy()) return "";
  return strf("the machine was busy: the %d thread%s had %.0f%% of %s core%s while timing, so each step timed "
              "slower than it will train on an idle machine (plan again when it is idle, or with fewer --threads)",
              threads, threads == 1 ? "" : "s", 100 * core_share, threads == 1 ? "its" : "their", threads == 1 ? "" : "s");
}

}  // namespace nt::experiment
