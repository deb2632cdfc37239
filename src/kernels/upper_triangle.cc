// SPDX-License-Identifier: MIT
#include "kernels/upper_triangle.h"

#include <algorithm>

namespace nt {

// The diagonal blocks are mirrored too, so the result is exactly symmetric whatever order the
// GEMM summed in.
//
// In 32 x 32 blocks: row by row, each element read came from a different cache line (C's rows are
// m floats apart), and Newton-Schulz's 512 x 512 mirrors took about 2 % of a depth-8 bf16 step.
void mirror_upper_triangle(float* c, int64_t m) {
  constexpr int64_t kBlock = 32;
  const int64_t blocks = (m + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bi = 0; bi < blocks; ++bi) {
    const int64_t i0 = bi * kBlock, i1 = std::min(m, i0 + kBlock);
    for (int64_t j0 = 0; j0 <= i0; j0 += kBlock)  // block (bi, bj) of the lower triangle from (bj, bi)
      for (int64_t i = i0; i < i1; ++i) {
        float* dst = c + i * m;
        for (int64_t j = j0, j1 = std::min(i, j0 + kBlock); j < j1; ++j) dst[j] = c[j * m + i];
      }
  }
}

}  // namespace nt
