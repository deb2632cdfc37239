// SPDX-License-Identifier: MIT
// `nanotrain bench` in parts: its flags, this machine's peaks (cmd_bench_peaks.cc), every hot
// kernel's rate against them (cmd_bench_kernels.cc: the GEMMs and the roofline chart;
// cmd_bench_ops.cc: the rest), whole training steps (cmd_bench_steps.cc), the kernel tests' cases
// on every kernel table (cmd_bench_cases.cc), and the command that runs them and writes the JSON
// (cmd_bench.cc).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/buffer.h"
#include "core/fields.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "model/config.h"
#include "profile/roofline.h"

namespace nt::cli::bench {

struct BenchFlags {
  std::string configs = "cpu,d6";
  std::string dtypes = "fp32,bf16";
  int steps = 3;
  int batch = 0;  // 0: kStepTokens a step (sequences_per_step)
  int threads = 0;
  bool no_kernels = false, no_steps = false, profile = false, quick = false, routes = false;
  bool kernel_cases = false;
  std::string case_tables;  // empty: every table of the CPU backend this machine runs
  std::string case_filter;
  std::string trace;
  std::string json;
  std::string roofline;

  template <class V>
  void for_each_field(V&& v) {
    v(configs, {.flag = "--configs", .help = "Models for the step benchmark: cpu, d6, d8, frontier (comma list)",
                .show_default = true});
    v(dtypes, {.flag = "--dtype", .help = "fp32, bf16 or both (comma list)", .show_default = true});
    v(steps, {.flag = "--steps", .help = "Timed steps per model (median)", .show_default = true, .min = 1,
              .error = "must be positive"});
    v(batch, {.flag = "--batch-size",
              .help = "Sequences per step (0 = 8,192 tokens a step, as tools/compare_pytorch.sh runs: 32 at T 256, "
                      "4 at frontier's T 2048)",
              .show_default = true, .min = 0, .error = "must be positive (or 0: 8,192 tokens a step)"});
    v(threads, {.flag = "--threads", .help = "OpenMP threads (0 = all cores)", .show_default = true, .min = 0,
                .error = "must be >= 0"});
    v(no_kernels, {.flag = "--no-kernels", .help = "Skip the per-kernel table"});
    v(no_steps, {.flag = "--no-steps", .help = "Skip the training-step table"});
    v(profile, {.flag = "--profile", .help = "Print where each model's timed steps spend their time"});
    v(quick, {.flag = "--quick",
              .help = "Time each kernel and each peak once: a quick check that everything runs (rough figures)"});
    v(trace, {.flag = "--trace",
              .help = "Write a Chrome trace (JSON) and the profile's chart (SVG) per model to "
                      "PREFIX.<model>.<dtype>.json/.svg"});
    v(routes, {.flag = "--routes",
               .help = "Print the backend's GEMM dispatch table (pattern, condition, kernel, why) and exit"});
    v(kernel_cases, {.flag = "--kernel-cases",
                     .help = "Time only the kernel tests' cases (kernels/kernel_cases.h: every shape, transpose, beta "
                             "and window they check) on every kernel table this machine runs, one row per table, op "
                             "and case (median of 5 batches of calls; --quick: one call), instead of the peaks, "
                             "kernels and steps. The reference table's plain loops are slow: it runs only when "
                             "--case-tables names ref"});
    v(case_tables, {.flag = "--case-tables",
                    .help = "With --kernel-cases: only these tables (comma list of names, e.g. cpu-avx2,ref; default: "
                            "every CPU table this machine runs)"});
    v(case_filter, {.flag = "--case-filter",
                    .help = "With --kernel-cases: only the rows whose 'family op case' contains this text (e.g. "
                            "attention_bwd, 1x1x1_nn)"});
    v(json, {.flag = "--json", .help = "Also write the figures as JSON to this file ('-' = stdout)"});
    v(roofline, {.flag = "--roofline",
                 .help = "Also draw the kernels against this machine's roofs (compute peaks, bandwidth) as an SVG "
                         "chart"});
  }
};

// Every flag's error comes before any measuring.
void validate(const BenchFlags& f);

// Model shapes benchmarked, vocab 8192: the `cpu` preset, d6, d8 and frontier.
ModelConfig named_config(const std::string& name);
std::vector<std::string> split(const std::string& s);

// Tokens a step when --batch-size is left at 0: tools/compare_pytorch.sh's, so that a plain
// `bench` measures the step the PyTorch comparison times (32 sequences at T 256, 4 at frontier's
// T 2048); fewer tokens would give Newton-Schulz, whose cost does not scale with the batch, a
// larger share of the step.
constexpr int64_t kStepTokens = 8192;
int sequences_per_step(const BenchFlags& f, const ModelConfig& c);

// Median seconds per call of fn over 5 timed batches, each at least 50 ms long, after a warm-up
// call; quick: one timed call.
double time_calls(const std::function<void()>& fn, bool quick);
// The same over `reps` batches, each calling fn until at least min_s has passed (0: once).
double time_calls(const std::function<void()>& fn, int reps, double min_s);
void fill_rand(float* p, size_t n, uint64_t seed, float scale = 1.0f);

// This machine's peaks; other processes can only lower a measured peak, so each is the best
// of every try so far.
struct Peaks {
  const Backend* backend = nullptr;
  bool avx512 = false, bf16 = false, amx = false;
  double fma = 0, bf16_gflops = 0, triad = 0, amx_loaded = 0;
  const char* fp32_isa() const { return avx512 ? "avx512" : "avx2"; }
  const char* bf16_isa() const { return amx ? "amx-bf16" : bf16 ? "avx512bf16" : "none (fp32)"; }
  void measure_compute();  // again after each model's steps, so a busy moment cannot flatter an MFU
  void measure_all(bool quick);
};

struct Machine {
  int threads = 0;
  std::string features;
  const Backend* backend = nullptr;
  const KernelTable* kernels = nullptr;
  const Backend::AltGemm* onednn = nullptr;  // oneDNN's bf16 GEMMs, timed beside ours; null: none
  std::vector<Backend::AltGemm> alternatives;
  double load = 0;  // 1-minute load average
};

// Measures the peaks and prints the header lines; fills out["machine"] and out["peaks"].
Peaks measure_peaks(const BenchFlags& f, Machine& m, nlohmann::json& out);

// The kernel table: one row per kernel on a model's shapes, with its rate against the roof
// that bounds it (profile/roofline.h).
class KernelRows {
 public:
  KernelRows(const Machine& m, const ModelConfig& c, int64_t batch, const Peaks& peaks, bool quick);
  void report(const std::string& name, double sec, double flops, double bytes, double peak);
  double time(const std::function<void()>& fn) const { return time_calls(fn, quick_); }

  const KernelTable& k;
  const ExecContext ctx;  // the machine's thread count (bench's --threads)
  const Backend::AltGemm* onednn;
  const Peaks& peaks;
  const int64_t B, N, C, F, V, H, KVH, D, T, R;  // R: the head's chunk of rows
  const size_t big;                             // floats in each scratch buffer
  Buffer<float> a, b, cbuf, d, e, g, rstd;
  Buffer<uint16_t> ah, bh, ch;
  nlohmann::json json = nlohmann::json::array();
  std::vector<profile::KernelRate> rates;

 private:
  bool quick_;
};

void bench_matmuls(KernelRows& r);
void bench_attention(KernelRows& r);
void bench_elementwise(KernelRows& r);
void bench_optimizer_kernels(KernelRows& r);

// Runs the kernel table, prints it, fills out["kernels"], and draws --roofline's chart.
void run_kernel_table(const BenchFlags& f, const Machine& m, const Peaks& peaks, nlohmann::json& out);
// --kernel-cases: the kernel tests' cases on every chosen table, printed, in out["kernel_cases"].
void run_case_table(const BenchFlags& f, nlohmann::json& out);
// --case-tables names only tables this machine runs and --case-filter keeps some row (an error
// naming the flag otherwise).
void check_case_flags(const BenchFlags& f);
// Under mpirun: the link between ranks 0 and 1 and the all-reduce, printed, in out["comm"].
void run_comm_table(nlohmann::json& out);
// Runs the training steps of every --configs x --dtype, prints them, fills out["steps"].
void run_step_table(const BenchFlags& f, const KernelTable& k, Peaks& peaks, nlohmann::json& out);

}  // namespace nt::cli::bench
