// SPDX-License-Identifier: MIT
// KernelTable::symmetric_product_f32 on the AVX-512 fp32 pair tile (gemm_pairs_f32_avx512;
// contract: kernels.h; built with -mavx512*, in the table where the CPU has AVX-512 F and BW).
//
// Newton-Schulz's Gram iteration multiplies three symmetric m x m products a step in fp32 (G G,
// P G, P (P G)). B is packed once into 32-column panels of pairs of rows (the pair tile's layout)
// and each panel is multiplied only by the rows that reach it: about half of the whole product's
// FLOPs, on a tile that runs near the peak, where block rows of sgemm would do 62.5 %.
#include <immintrin.h>
#include <omp.h>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx512.h"
#include "backends/cpu/mirror_upper.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;            // columns of a B panel
constexpr int64_t kPairRow = 2 * kPanel;  // floats of a panel's pair-row

}  // namespace

bool symmetric_product_f32_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m) {
  if (m % kPanel != 0 || m < kPanel) return false;
  const int64_t panels = m / kPanel, k2 = m / 2;
  // The calling thread's scratch, shared read-only by the region's threads once packed.
  float* bp = static_cast<float*>(thread_scratch(ctx, kScratchSymmetricB, size_t(m * m) * sizeof(float)));
#pragma omp parallel num_threads(ctx.threads())
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
  cpu::mirror_upper_triangle(ctx, c, m);
  return true;
}

}  // namespace nt::cpu
