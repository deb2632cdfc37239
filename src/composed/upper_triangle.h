// SPDX-License-Identifier: MIT
// Products with a symmetric result, computed as their upper triangle: the block rows to
// multiply and the mirror that fills the rest. Shared by the CPU backend's Gram product
// (C = X X^T) and Newton-Schulz's products of commuting symmetric matrices
// (newton_schulz_bf16.h), which compose them from any backend's GEMMs.
#pragma once
#include <cstdint>

#include "kernels/exec.h"

namespace nt {

// Calls gemm(i0, rows) for each block row [i0, i0 + rows) of an (m, m) upper triangle, whose
// part right of the diagonal, C[i0:i0+rows, i0:m], is the product to compute: 4 block rows,
// 62.5 % of the whole product's FLOPs.
template <class Gemm>
void for_each_upper_block_row(int64_t m, Gemm&& gemm) {
  constexpr int64_t kBlocks = 4;
  const int64_t bs = (m + kBlocks - 1) / kBlocks;
  for (int64_t i0 = 0; i0 < m; i0 += bs) gemm(i0, bs < m - i0 ? bs : m - i0);
}

// Copies the strict upper triangle of the (m, m) row-major c below the diagonal.
void mirror_upper_triangle(const ExecContext& ctx, float* c, int64_t m);

}  // namespace nt
