// SPDX-License-Identifier: MIT
// Muon's Newton-Schulz iteration with bf16 GEMMs (fp32 accumulation, fp32 iterate), through a
// KernelTable's to_bf16 / matmul_bf16 / axpby / sum_squares only. Same arguments and result
// as optim's newton_schulz (x (m, n) with m <= n is orthogonalised in place; y, a, b are fp32
// scratch of m*n, m*m, m*m); the bf16 operand copies are owned here, sized on first use.
// The five GEMM-heavy iterations run at the bf16 rate: ~2x the fp32 ones on AVX-512-BF16.
#pragma once
#include <cstdint>

#include "core/buffer.h"
#include "kernels/kernels.h"

namespace nt {

class NewtonSchulzBf16 {
 public:
  void run(const KernelTable& k, float* x, float* y, float* a, float* b, int64_t m, int64_t n, int steps);

 private:
  Buffer<uint16_t> xh_, ah_, bh_;
};

}  // namespace nt
