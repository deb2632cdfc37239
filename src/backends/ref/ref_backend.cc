// SPDX-License-Identifier: MIT
#include "backends/ref/ref_backend.h"

#include "core/system.h"

namespace nt::ref {

const Backend& ref_backend(decltype(Backend::measure_peak) host_peak) {
  static const Backend b = {
      .device = "ref",
      .kernels = ref_kernels,
      .tables = [] { return std::vector<const KernelTable*>{&ref_kernels()}; },
      .default_precision = [] { return Precision::kFp32; },
      .describe = [] { return cpu_features().describe(); },
      .measure_peak = host_peak,
  };
  return b;
}

}  // namespace nt::ref
