// SPDX-License-Identifier: MIT
#include "backends/cpu/mirror_upper.h"

#include <algorithm>

#include "backends/cpu/simd_avx2.h"  // transpose_32bit: 8 x 8 register blocks (AVX2 is the floor)

namespace nt::cpu {

// The diagonal blocks are mirrored too, so the result is exactly symmetric whatever order the
// GEMM summed in.
//
// In 32 x 32 blocks, because element by element every read comes from a different cache line.
// The blocks below the diagonal go through 8 x 8 register transposes; the diagonal blocks, which
// would read what they write, stay element by element.
void mirror_upper_triangle(const ExecContext& ctx, float* c, int64_t m) {
  constexpr int64_t kBlock = 32;
  const int64_t blocks = (m + kBlock - 1) / kBlock;
  auto* w = reinterpret_cast<uint32_t*>(c);  // moved as bit patterns: exact
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx.threads())
  for (int64_t bi = 0; bi < blocks; ++bi) {
    const int64_t i0 = bi * kBlock, i1 = std::min(m, i0 + kBlock);
    // Block (bi, bj) of the lower triangle, bj < bi, from block (bj, bi) of the upper one.
    for (int64_t j0 = 0; j0 < i0; j0 += kBlock)
      transpose_32bit(w + i0 * m + j0, m, w + j0 * m + i0, m, kBlock, i1 - i0);
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = i0; j < i; ++j) c[i * m + j] = c[j * m + i];
  }
}

}  // namespace nt::cpu
