// SPDX-License-Identifier: MIT
#include "composed/upper_triangle.h"

#include <algorithm>

namespace nt {

// In 32 x 32 blocks, so that the reads of a column come from few cache lines. The diagonal blocks
// are mirrored too, so the result is exactly symmetric whatever order the GEMM summed in.
void mirror_upper_triangle(const ExecContext& ctx, float* c, int64_t m) {
  constexpr int64_t kBlock = 32;
  const int64_t blocks = (m + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx.threads())
  for (int64_t bi = 0; bi < blocks; ++bi) {
    const int64_t i0 = bi * kBlock, i1 = std::min(m, i0 + kBlock);
    for (int64_t j0 = 0; j0 <= i0; j0 += kBlock)
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < std::min(i, j0 + kBlock); ++j) c[i * m + j] = c[j * m + i];
  }
}

}  // namespace nt
