// SPDX-License-Identifier: MIT
// KernelTable::symmetric_product_f32 on the AVX-512 fp32 pair tile (gemm_pairs_f32_avx512;
// contract: kernels.h; built with -mavx512*, in the table where the CPU has AVX-512 F and BW).
//
// Newton-Schulz's Gram iteration (the MLP's long matrices, fp32 and bf16 runs alike) multiplies
// three symmetric m x m products a step in fp32: G G, P G and P (P G). Composed, each went through
// sgemm in four block rows of the upper triangle (62.5 % of the whole product's FLOPs) at 83-87 %
// of a core's fp32 peak (C = A B^T on one thread, 128-row blocks). Here B is packed once into
// contiguous 32-column panels of pairs of rows (the pair tile's layout, no L1 set conflicts) and
// each panel is multiplied by the rows that reach it, 0 .. 32 p + 31: 53 % of the FLOPs at
// m = 512, on a tile that runs at 96-100 % of the peak on warm operands.
#include <immintrin.h>
#include <omp.h>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx512.h"
#include "backends/cpu/mirror_upper.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;            // columns of a B panel
constexpr int64_t kPairRow = 2 * kPanel;  // floats of a panel's pair-row

}  // namespace

bool symmetric_product_f32_avx512(float* c, const float* a, const float* b, int64_t m) {
  if (m % kPanel != 0 || m < kPanel) return false;
  const int64_t panels = m / kPanel, k2 = m / 2;
  // The calling thread's scratch, shared read-only by the region's threads once packed.
  float* bp = static_cast<float*>(thread_scratch(kScratchSymmetricB, size_t(m * m) * sizeof(float)));
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t kk = 0; kk < k2; ++kk)  // B's rows 2 kk and 2 kk + 1: pair-row kk of every panel
      store_f32_pair_row(bp + kk * kPairRow, k2 * kPairRow, b + 2 * kk * m, b + (2 * kk + 1) * m, m);
#pragma omp for schedule(dynamic, 1)
    for (int64_t q = 0; q < panels; ++q) {
      const int64_t p = panels - 1 - q;  // longest first
      gemm_pairs_f32_avx512(c + kPanel * p, m, a, m, bp + p * k2 * kPairRow, kPairRow, kPanel * (p + 1), kPanel, k2,
                            false);
    }
  }
  mirror_upper_triangle(c, m);
  return true;
}

}  // namespace nt::cpu
