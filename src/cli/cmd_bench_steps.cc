// SPDX-License-Identifier: MIT
// `nanotrain bench`'s training steps: forward + backward + optimizer on random tokens for every
// --configs x --dtype, the median step's tokens/s and MFU against the best peak seen so far.
#include <cstdio>
#include <vector>

#include "cli/bench.h"
#include "core/check.h"
#include "core/files.h"
#include "profile/profile.h"
#include "train/step_timing.h"

namespace nt::cli::bench {

namespace {

struct StepResult {
  int B = 0, T = 0;
  double sec = 0, tps = 0, peak = 0, mfu = 0;
};

// The median of f.steps timed steps after a warm-up, with the profiler on when asked.
StepResult time_steps(const BenchFlags& f, const KernelTable& k, const ModelConfig& c, Precision prec) {
  StepResult r;
  r.B = sequences_per_step(f, c), r.T = c.seq_len;
  OptimConfig oc;
  oc.resolve(c.d_model);
  oc.bf16_newton_schulz = prec == Precision::kBf16;  // as `train` runs it
  const TimedSteps t = time_training_steps(c, k, prec, oc, r.B, f.steps, [&] {
    if (!f.profile && f.trace.empty()) return;
    profile::reset();
    profile::enable(true);
  });
  r.sec = median(t.step_s()), r.tps = double(r.B) * r.T / r.sec;
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
