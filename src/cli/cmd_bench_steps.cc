// SPDX-License-Identifier: MIT
// `nanotrain bench`'s training steps: forward + backward + optimizer on random tokens for every
// --configs x --dtype, the median step's tokens/s and MFU against the best peak seen so far.
// Under mpirun the ranks share each step as `train` does; rank 0 prints the job's row and a line
// per rank (its compute, optimizer and communication).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cli/bench.h"
#include "core/check.h"
#include "core/files.h"
#include "dist/comm.h"
#include "profile/profile.h"
#include "train/step_timing.h"

namespace nt::cli::bench {

namespace {

struct StepResult {
  int B = 0, T = 0;
  double sec = 0, tps = 0, peak = 0, mfu = 0;
  // This rank's medians: forward + backward, optimizer, communication (several ranks only), and
  // the communication of the same steps with the gradients summed after the backward, and how
  // much of that was waiting for the slowest rank's backward (the rest is the transfer).
  double fb = 0, opt = 0, comm = 0, comm_after = 0, wait_after = 0;
};

// Per rank: its host, and the median step, forward + backward, optimizer and communication.
nlohmann::json rank_rows(dist::Comm& comm, const StepResult& r) {
  const size_t n = size_t(comm.size());
  constexpr size_t kFields = 6;
  std::vector<double> all(kFields * n, 0.0);
  double* mine = all.data() + kFields * size_t(comm.rank());
  mine[0] = r.sec, mine[1] = r.fb, mine[2] = r.opt, mine[3] = r.comm, mine[4] = r.comm_after, mine[5] = r.wait_after;
  comm.allreduce_sum(all.data(), all.size());
  const std::vector<std::string> hosts = dist::rank_hosts(comm);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    const double* f = all.data() + kFields * i;
    rows.push_back({{"rank", i}, {"host", hosts[i]}, {"step_ms", f[0] * 1e3}, {"forward_backward_ms", f[1] * 1e3},
                    {"optimizer_ms", f[2] * 1e3}, {"comm_ms", f[3] * 1e3}, {"comm_share", f[0] > 0 ? f[3] / f[0] : 0.0},
                    {"comm_after_backward_ms", f[4] * 1e3},
                    {"comm_hidden_share", f[4] > 0 ? std::max(0.0, 1.0 - f[3] / f[4]) : 0.0},
                    {"comm_wait_ms", f[5] * 1e3}, {"comm_transfer_ms", std::max(0.0, f[4] - f[5]) * 1e3},
                    {"comm_transfer_share", f[0] > 0 ? std::max(0.0, f[4] - f[5]) / f[0] : 0.0},
                    {"tokens_per_second", double(r.B / int(n)) * r.T / f[0]}});
  }
  return rows;
}

// The median of f.steps timed steps after a warm-up, with the profiler on when asked.
StepResult time_steps(const BenchFlags& f, const KernelTable& k, const ModelConfig& c, Precision prec,
                      dist::Comm& comm) {
  StepResult r;
  r.B = sequences_per_step(f, c), r.T = c.seq_len;
  OptimConfig oc;
  oc.resolve(c.d_model, c.tie_embeddings);
  oc.bf16_newton_schulz = prec == Precision::kBf16;  // as `train` runs it
  const TimedSteps t = time_training_steps(c, k, prec, oc, r.B, f.steps, [&] {
    if (!f.profile && f.trace.empty()) return;
    profile::reset();
    profile::enable(true);
  }, comm.size() > 1 ? &comm : nullptr);
  r.sec = median(t.step_s()), r.tps = double(r.B) * r.T / r.sec;
  r.fb = median(t.forward_backward_s), r.opt = median(t.optimizer_s), r.comm = median(t.comm_s);
  if (comm.size() > 1) {
    // The same steps with the sum after the backward: what the overlap hid.
    const TimedSteps after = time_training_steps(c, k, prec, oc, r.B, f.steps, {}, &comm, /*overlap=*/false);
    r.comm_after = median(after.comm_s), r.wait_after = median(after.wait_s);
  }
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
  dist::Comm& comm = dist::world();
  if (comm.size() > 1)
    std::printf("  over %d ranks: each computes 1/%d of the sequences; tokens/s and the peak are the job's\n",
                comm.size(), comm.size());
  std::printf("  %-9s %-5s %10s %12s %8s %16s\n", "model", "dtype", "step ms", "tokens/s", "MFU", "peak used");
  for (const auto& name : split(f.configs)) {
    const ModelConfig c = named_config(name);
    for (const auto& dts : split(f.dtypes)) {
      const Precision prec = parse_precision(dts.c_str());
      StepResult r = time_steps(f, k, c, prec, comm);
      // Once more right after the steps: MFU is against the best peak seen in this run so far
      // (over several ranks, the sum of every rank's, each measured on its own cores).
      peaks.measure_compute();
      r.peak = prec == Precision::kBf16 ? peaks.bf16_gflops : peaks.fma;
      if (comm.size() > 1) comm.allreduce_sum(&r.peak, 1);
      r.mfu = r.tps * flops_per_token(c, r.T) / (r.peak * 1e9);
      if (profile::enabled()) report_profile(f, name, c, prec, r);
      std::printf("  %-9s %-5s %10.1f %12.0f %7.1f%% %9.0f GF/s %s\n", name.c_str(), precision_name(prec),
                  r.sec * 1e3, r.tps, 100 * r.mfu, r.peak, prec == Precision::kBf16 ? "bf16" : "fp32");
      sj.push_back({{"model", name}, {"config", c.to_json()}, {"dtype", precision_name(prec)}, {"batch", r.B},
                    {"step_ms", r.sec * 1e3}, {"tokens_per_second", r.tps}, {"mfu", r.mfu}, {"peak_gflops", r.peak},
                    {"flops_per_token", flops_per_token(c, r.T)}, {"steps", f.steps},
                    {"params", count_params(c)}, {"forward_backward_ms", r.fb * 1e3}, {"optimizer_ms", r.opt * 1e3}});
      if (comm.size() > 1) {
        const nlohmann::json ranks = rank_rows(comm, r);
        for (const auto& x : ranks)
          std::printf("    rank %d (%s): forward + backward %.1f ms, optimizer %.1f ms, communication %.1f ms "
                      "(%.1f %% of its step; %.1f ms with the gradients summed after the backward: %.0f %% hidden, "
                      "%.1f ms of it waiting for the slowest rank, %.1f ms transfer = %.1f %% of its step), "
                      "%.0f tokens/s\n",
                      x["rank"].get<int>(), x["host"].get<std::string>().c_str(), x["forward_backward_ms"].get<double>(),
                      x["optimizer_ms"].get<double>(), x["comm_ms"].get<double>(), 100 * x["comm_share"].get<double>(),
                      x["comm_after_backward_ms"].get<double>(), 100 * x["comm_hidden_share"].get<double>(),
                      x["comm_wait_ms"].get<double>(), x["comm_transfer_ms"].get<double>(),
                      100 * x["comm_transfer_share"].get<double>(), x["tokens_per_second"].get<double>());
        sj.back()["ranks"] = ranks;
      }
      std::fflush(stdout);
    }
  }
  out["steps"] = sj;
  // The table's MFUs used the best peaks seen so far; these are the best of the whole run.
  out["peaks"]["fp32_fma_gflops"] = peaks.fma;
  out["peaks"]["bf16_gflops"] = peaks.bf16_gflops;
}

}  // namespace nt::cli::bench
