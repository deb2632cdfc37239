// SPDX-License-Identifier: MIT
// The CPU backend's Backend: its tables, its default precision and its measurements.
#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/peak.h"
#include "core/system.h"

namespace nt::cpu {

namespace {
bool has_tiles() { return cpu_features().amx_bf16; }

const Backend kCpu = {
    .device = "cpu",
    .kernels = cpu_kernels,
    .tables = [] { return std::vector<const KernelTable*>{&cpu_kernels()}; },
    // bf16 where the CPU multiplies bf16 at full rate; elsewhere its bf16 GEMMs would widen to fp32.
    .default_precision = [] { return cpu_features().avx512bf16 ? Precision::kBf16 : Precision::kFp32; },
    .describe = [] { return cpu_features().describe(); },
    .measure_peak = [](Precision p, double seconds, int tries) {
      return measure_compute_peak(p == Precision::kBf16, seconds, tries);
    },
    .measure_bandwidth_gbs = triad_gbs,
    .measure_tiles_loaded_gflops = [](double seconds) { return has_tiles() ? peak_bf16_amx_loaded_gflops(seconds) : 0.0; },
    .gemm_routes = nullptr,
    .alternative_gemms = [] { return std::vector<Backend::AltGemm>{{"onednn", matmul_bf16_onednn, matmul_bf16_out_onednn}}; },
};
}  // namespace

const Backend& cpu_backend() { return kCpu; }

}  // namespace nt::cpu
