// SPDX-License-Identifier: MIT
// A backend as the layers above the kernels see it: its kernel tables, its default precision,
// a description of the machine, and measurements of the machine's limits (for MFU and bench).
// The trainer, the evaluators and `bench` reach a device only through this; nothing above
// kernels/ includes a backend's own headers.
//
// Nothing here assumes host memory or OpenMP: a device backend (CUDA, with device memory and
// streams) fills the same struct, its tables' ops taking device pointers (docs/ARCHITECTURE.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/precision.h"

namespace nt {

// A compute peak measured now, and what was measured ("AVX-512 FMA", "AMX tiles", ...).
struct ComputePeak {
  double gflops = 0;
  const char* unit = "";
};

struct Backend {
  const char* device;  // "cpu", "ref": the --device name
  // The table this machine runs best, and every table it can execute (tests and bench run all).
  const KernelTable& (*kernels)();
  std::vector<const KernelTable*> (*tables)();
  // The precision a run gets without --dtype (bf16 where bf16 products run at full rate).
  Precision (*default_precision)();
  // The machine as this backend sees it (for the start-up line and `info`).
  std::string (*describe)();
  // The compute peak a run in this precision can reach, measured now: the best of `tries`
  // tries of `seconds` each (other processes can only lower a try).
  ComputePeak (*measure_peak)(Precision p, double seconds, int tries);
  // Memory bandwidth in GB/s by a STREAM-like triad over n floats, best of reps; null: none.
  double (*measure_bandwidth_gbs)(int64_t n, int reps) = nullptr;
  // The bf16 matrix tiles' peak with every operand tile loaded from L1; null: no tiles.
  double (*measure_tiles_loaded_gflops)(double seconds) = nullptr;
  // The GEMM dispatch table as text (pattern, condition, kernel, why); null: none.
  std::string (*gemm_routes)() = nullptr;
  // Other implementations of the bf16 GEMMs (oneDNN's, on the CPU), for bench's comparison rows.
  struct AltGemm {
    const char* name;
    decltype(KernelTable::matmul_bf16) matmul_bf16;
    decltype(KernelTable::matmul_bf16_out) matmul_bf16_out;
  };
  std::vector<AltGemm> (*alternative_gemms)() = nullptr;
};

// The backend behind --device NAME ("cpu", "ref"); anything else is a one-line error listing
// what this build has.
const Backend& backend_for_device(const std::string& device);

}  // namespace nt
