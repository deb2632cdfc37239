// SPDX-License-Identifier: MIT
// `nanotrain bench`: this machine's peaks (measured here), every hot kernel's rate against
// them on a model's shapes, and whole training steps (forward + backward + optimizer) with
// tokens/s and MFU. A table on stdout; --json writes the same figures as JSON. The parts are
// in cmd_bench_*.cc (cli/bench.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/field_options.h"
#include "core/check.h"
#include "core/files.h"
#include "core/system.h"
#include "dist/comm.h"
#include "model/gpt.h"
#include "train/step_timing.h"

namespace nt::cli {

namespace bench {

using Clock = std::chrono::steady_clock;

double time_calls(const std::function<void()>& fn, bool quick) {
  return time_calls(fn, quick ? 1 : 5, quick ? 0.0 : 0.05);
}

double time_calls(const std::function<void()>& fn, int reps, double min_s) {
  fn();  // warm-up (primitive creation, page faults)
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    int calls = 0;
    const auto t0 = Clock::now();
    double dt = 0;
    do {
      fn();
      ++calls;
      dt = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (dt < min_s);
    t.push_back(dt / calls);
  }
  return median(t);
}

void fill_rand(float* p, size_t n, uint64_t seed, float scale) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = scale * (float(s >> 40) / float(1 << 24) * 2.0f - 1.0f);
  }
}

ModelConfig named_config(const std::string& name) {
  ModelConfig c;
  c.vocab_size = 8192, c.seq_len = 256, c.head_dim = 64;
  if (name == "cpu") c.depth = 4, c.d_model = 256;
  else if (name == "d6") c.depth = 6, c.d_model = 384;
  else if (name == "d8") c.depth = 8, c.d_model = 512;
  else if (name == "frontier") c.depth = 8, c.d_model = 512, c.head_dim = 128, c.seq_len = 2048, c.vocab_size = 32768;
  else fail("--configs %s: unknown (cpu, d6, d8, frontier)", name.c_str());
  c.n_head = c.n_kv_head = c.d_model / c.head_dim;
  c.validate();
  return c;
}

int sequences_per_step(const BenchFlags& f, const ModelConfig& c) {
  return f.batch > 0 ? f.batch : int(std::max<int64_t>(1, kStepTokens / c.seq_len));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

namespace {

// Where a file will be written (--json, --trace's prefix): its folder must exist, checked before
// minutes of measuring rather than after.
void check_folder_of(const char* flag, const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    fail("%s %s: no folder %s to write into", flag, path.c_str(), parent.string().c_str());
}

void write_json(const std::string& target, const nlohmann::json& out) {
  const std::string s = out.dump(2) + "\n";
  if (target == "-") std::fputs(s.c_str(), stdout);
  else write_file_atomic(target, s);
}

void run_bench(const BenchFlags& f) {
  if (f.routes) {
    const Backend& be = backend_for_device("cpu");
    std::fputs(be.gemm_routes ? be.gemm_routes().c_str() : "this backend has no GEMM route table\n", stdout);
    return;
  }
  nlohmann::json out;
  if (f.kernel_cases) {
    run_case_table(f, out);
    if (!f.json.empty()) write_json(f.json, out);
    return;
  }
  // Under mpirun: the training steps only, shared by the ranks; rank 0 prints and writes.
  dist::Comm& comm = dist::world();
  if (comm.size() > 1) {
    if (!f.no_kernels)
      fail("bench over %d ranks times whole training steps only: add --no-kernels (the kernel table is one "
           "process's)", comm.size());
    if (!f.trace.empty()) fail("--trace %s: a trace is one process's (run bench without mpirun)", f.trace.c_str());
    if (f.profile) fail("--profile: a profile is one process's (run bench without mpirun)");
    if (comm.rank() != 0 && !std::freopen("/dev/null", "w", stdout)) fail("cannot silence rank %d", comm.rank());
  }
  Machine m;
  m.threads = setup_threads(f.threads, comm.local_rank(), comm.local_size());
  Peaks peaks = measure_peaks(f, m, out);
  if (!f.no_kernels) run_kernel_table(f, m, peaks, out);
  if (comm.size() > 1) run_comm_table(out);
  if (!f.no_steps) run_step_table(f, *m.kernels, peaks, out);
  if (!f.json.empty() && comm.rank() == 0) write_json(f.json, out);
}

}  // namespace

void validate(const BenchFlags& f) {
  validate_fields(f);
  const auto configs = split(f.configs), dtypes = split(f.dtypes);
  if (configs.empty()) fail("--configs '%s': no model named (cpu, d6, d8, frontier)", f.configs.c_str());
  if (dtypes.empty() && !f.no_steps) fail("--dtype '%s': no dtype named (fp32, bf16)", f.dtypes.c_str());
  for (const auto& name : configs) named_config(name);
  for (const auto& d : dtypes) parse_precision(d.c_str());
  if (!f.json.empty() && f.json != "-") check_folder_of("--json", f.json);
  if (!f.trace.empty()) check_folder_of("--trace", f.trace);
  if (!f.roofline.empty()) {
    if (f.no_kernels) fail("--roofline %s: the chart needs the kernel table (drop --no-kernels)", f.roofline.c_str());
    check_folder_of("--roofline", f.roofline);
  }
  if (!f.kernel_cases && !f.case_tables.empty())
    fail("--case-tables %s: only with --kernel-cases", f.case_tables.c_str());
  if (!f.kernel_cases && !f.case_filter.empty())
    fail("--case-filter %s: only with --kernel-cases", f.case_filter.c_str());
  if (f.kernel_cases && !(f.roofline.empty() && f.trace.empty()))
    fail("--kernel-cases: the tests' cases are timed alone (--roofline and --trace draw the model's kernels and steps)");
  if (f.kernel_cases) check_case_flags(f);
}

}  // namespace bench

void add_bench_command(CLI::App& app) {
  auto f = std::make_shared<bench::BenchFlags>();
  auto* c = app.add_subcommand("bench", "Measure peaks, kernels and whole training steps (tokens/s, MFU)");
  add_field_options(c, *f);
  c->callback([f] {
    bench::validate(*f);
    bench::run_bench(*f);
  });
}

}  // namespace nt::cli
