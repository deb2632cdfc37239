// SPDX-License-Identifier: MIT
// `nanotrain bench`'s training steps: forward + backward + optimizer on random tokens for every
// --configs x --dtype, the median step's tokens/s and MFU against the best peak seen so far.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cli/bench.h"
#include "core/check.h"
#include "core/files.h"
#include "model/gpt.h"
#include "model/params.h"
#include "optim/optimizer.h"
#include "profile/profile.h"

namespace nt::cli::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct StepResult {
  int B = 0, T = 0;
  double sec = 0, tps = 0, peak = 0, mfu = 0;
};

// The median of f.steps timed steps after a warm-up, with the profiler on when asked.
StepResult time_steps(const BenchFlags& f, const KernelTable& k, const ModelConfig& c, Precision prec) {
  StepResult r;
  r.B = sequences_per_step(f, c), r.T = c.seq_len;
  const int B = r.B, T = r.T;
  Gpt model(c, k, B, T, prec);
  init_params(model.params(), 1);
  OptimConfig oc;
  oc.resolve(c.d_model);
  oc.bf16_newton_schulz = prec == Precision::kBf16;  // as `train` runs it
  Optimizer opt(oc, model.params(), k);
  std::vector<int32_t> x(size_t(B) * T), y(size_t(B) * T);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t((i * 2654435761u) % uint32_t(c.vocab_size));
  for (size_t i = 0; i < y.size(); ++i) y[i] = x[(i + 1) % x.size()];
  auto step = [&] {
    profile::Zone zs(profile::kStep);
    model.forward_backward(x.data(), y.data(), B, T, 1.0, false);  // overwrites the gradients
    profile::Zone z(profile::kOptimizer);
    opt.step(model.params(), model.grads(), 1.0);
  };
  step();  // warm-up
  if (f.profile || !f.trace.empty()) {
    profile::reset();
    profile::enable(true);
  }
  std::vector<double> t;
  for (int s = 0; s < f.steps; ++s) {
    const auto t0 = Clock::now();
    step();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  r.sec = t[t.size() / 2], r.tps = double(B) * T / r.sec;
  return r;
}

// --profile's report and --trace's files for one model and dtype.
void report_profile(const BenchFlags& f, const std::string& name, const ModelConfig& c, Precision prec,
                    const StepResult& r) {
  profile::enable(false);
  char label[96];
  std::snprintf(label, sizeof label, "the best %s peak measured in this run, %.0f GFLOP/s", precision_name(prec),
                r.peak);
  std::printf("%s", profile::report(flops_per_token(c, r.T) * r.B * r.T, r.peak, label).c_str());
  if (f.trace.empty()) return;
  const std::string path = f.trace + "." + name + "." + precision_name(prec);
  profile::write_trace(path + ".json");
  const std::string title = strf("nanotrain bench: where a %s %s step's time goes", name.c_str(), precision_name(prec));
  const std::string subtitle = strf("batch %d x T %d, median %.1f ms a step, MFU %.1f %% of %.0f GFLOP/s", r.B, r.T,
                                    r.sec * 1e3, 100.0 * r.mfu, r.peak);
  write_file_atomic(path + ".svg", profile::chart_svg(title, subtitle));
  std::printf("  trace: %s.json, chart: %s.svg\n", path.c_str(), path.c_str());
}

}  // namespace

void run_step_table(const BenchFlags& f, const KernelTable& k, Peaks& peaks, nlohmann::json& out) {
  nlohmann::json sj = nlohmann::json::array();
  if (f.batch > 0)
    std::printf("training steps (forward + backward + optimizer, %d x T sequences, random tokens):\n", f.batch);
  else
    std::printf("training steps (forward + backward + optimizer, %ld tokens: %ld / T sequences, random tokens):\n",
                long(kStepTokens), long(kStepTokens));
  std::printf("  %-9s %-5s %10s %12s %8s %16s\n", "model", "dtype", "step ms", "tokens/s", "MFU", "peak used");
  for (const auto& name : split(f.configs)) {
    const ModelConfig c = named_config(name);
    for (const auto& dts : split(f.dtypes)) {
      const Precision prec = parse_precision(dts.c_str());
      StepResult r = time_steps(f, k, c, prec);
      // Once more right after the steps: MFU is against the best peak seen in this run so far.
      peaks.measure_compute();
      r.peak = prec == Precision::kBf16 ? peaks.bf16_gflops : peaks.fma;
      r.mfu = r.tps * flops_per_token(c, r.T) / (r.peak * 1e9);
      if (profile::enabled()) report_profile(f, name, c, prec, r);
      std::printf("  %-9s %-5s %10.1f %12.0f %7.1f%% %9.0f GF/s %s\n", name.c_str(), precision_name(prec),
                  r.sec * 1e3, r.tps, 100 * r.mfu, r.peak, prec == Precision::kBf16 ? "bf16" : "fp32");
      sj.push_back({{"model", name}, {"config", c.to_json()}, {"dtype", precision_name(prec)}, {"batch", r.B},
                    {"step_ms", r.sec * 1e3}, {"tokens_per_second", r.tps}, {"mfu", r.mfu}, {"peak_gflops", r.peak},
                    {"flops_per_token", flops_per_token(c, r.T)}, {"steps", f.steps}});
      std::fflush(stdout);
    }
  }
  out["steps"] = sj;
  // The table's MFUs used the best peaks seen so far; these are the best of the whole run.
  out["peaks"]["fp32_fma_gflops"] = peaks.fma;
  out["peaks"]["bf16_gflops"] = peaks.bf16_gflops;
}

}  // namespace nt::cli::bench
