// SPDX-License-Identifier: MIT
// `nanotrain bench`'s peaks: fp32 FMA and bf16 compute, the AMX tiles with their operands
// loaded, and the triad bandwidth, each the best of several short tries.
#include <algorithm>
#include <cstdio>

#include "cli/bench.h"
#include "core/system.h"

namespace nt::cli::bench {

void Peaks::measure_compute() {
  fma = std::max(fma, backend->measure_peak(Precision::kFp32, 0.15, 1).gflops);
  // With AMX the tiles are the bf16 peak (the bf16 GEMMs and the attention run on them).
  bf16_gflops = bf16 ? std::max(bf16_gflops, backend->measure_peak(Precision::kBf16, 0.15, 1).gflops) : fma;
}

void Peaks::measure_all(bool quick) {
  for (int i = 0; i < (quick ? 1 : 3); ++i) {
    if (amx && backend->measure_tiles_loaded_gflops)
      amx_loaded = std::max(amx_loaded, backend->measure_tiles_loaded_gflops(0.15));
    measure_compute();
    triad = std::max(triad, backend->measure_bandwidth_gbs(int64_t(1) << 25, 3));
  }
}

namespace {

double load_average() {
  double load = 0;
  if (FILE* lf = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(lf, "%lf", &load) != 1) load = 0;
    std::fclose(lf);
  }
  return load;
}

}  // namespace

Peaks measure_peaks(const BenchFlags& f, Machine& m, nlohmann::json& out) {
  const CpuFeatures cf = cpu_features();
  Peaks p;
  m.backend = p.backend = &backend_for_device("cpu");
  p.avx512 = cf.avx512f && cf.avx512bw, p.bf16 = p.avx512 && cf.avx512bf16, p.amx = p.bf16 && cf.amx_bf16;
  m.features = cf.describe();
  m.kernels = &m.backend->kernels();
  if (m.backend->alternative_gemms) m.alternatives = m.backend->alternative_gemms();
  m.onednn = m.alternatives.empty() ? nullptr : &m.alternatives.front();
  out["machine"] = {{"host", hostname()}, {"threads", m.threads}, {"features", m.features}, {"kernels", m.kernels->name}};
  p.measure_all(f.quick);
  out["peaks"] = {{"fp32_fma_gflops", p.fma}, {"bf16_gflops", p.bf16_gflops}, {"triad_gbs", p.triad},
                  {"fp32_isa", p.fp32_isa()}, {"bf16_isa", p.bf16_isa()}};
  // MFU stays against the tiles' own rate; the loaded rate says how much of it a GEMM can reach.
  if (p.amx) out["peaks"]["bf16_amx_loaded_gflops"] = p.amx_loaded;
  m.load = load_average();
  out["machine"]["loadavg_1min"] = m.load;
  std::printf("nanotrain bench: %d threads, kernels %s, load average %.2f%s\n", m.threads, m.kernels->name, m.load,
              m.load > m.threads + 0.5 ? " (BUSY: other processes share the cores; rates are depressed)" : "");
  std::printf("peaks (measured now): fp32 FMA %.0f GFLOP/s (%s), bf16 %.0f GFLOP/s (%s), triad %.1f GB/s\n", p.fma,
              p.fp32_isa(), p.bf16_gflops, p.bf16_isa(), p.triad);
  if (p.amx)
    std::printf("  AMX with a GEMM's operand tiles loaded every step (from L1): %.0f GFLOP/s, %.0f %% of the tiles' "
                "peak: no bf16 GEMM here runs faster\n",
                p.amx_loaded, 100.0 * p.amx_loaded / p.bf16_gflops);
  std::printf("\n");
  return p;
}

}  // namespace nt::cli::bench
