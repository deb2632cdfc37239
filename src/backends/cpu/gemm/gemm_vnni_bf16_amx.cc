// SPDX-License-Identifier: MIT
// The AMX GEMM behind the bf16 attention on CPUs with AMX (contract in gemm.h).
//
// B's packing in pairs along k is AMX's own B layout: 16 pair-rows of 16 columns are one
// 16 x 64-byte tile, loaded with B's row stride, and 16 rows of 32 bf16 of A are one A tile. The
// product runs in blocks of up to 2 x 2 accumulator tiles (32 x 32 of C), each step loading at
// most two A and two B tiles for four tdpbf16ps. What is not whole tiles (rows or columns past
// a multiple of 16, pairs past a multiple of 16) goes to the AVX-512-BF16 tile, adding into the
// same C. Built with -mamx-tile -mamx-bf16; called only when cpu_features().amx_bf16.
#include "backends/cpu/amx_tiles.h"
#include "backends/cpu/gemm/gemm.h"

namespace nt::cpu {

void gemm_vnni_bf16_amx(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                        int64_t m, int64_t n, int64_t k2, bool accumulate) {
  const int64_t m16 = m / 16 * 16, n16 = n / 16 * 16, k16 = k2 / 16 * 16;
  if (m16 == 0 || n16 == 0 || k16 == 0) return gemm_vnni_bf16_avx512(c, ldc, a, lda, bp, ldb, m, n, k2, accumulate);
  load_full_tile_config();
  const int64_t steps = k16 / 16;
  for (int64_t i = 0; i < m16; i += 32) {
    const bool two_rows = i + 32 <= m16;
    for (int64_t j = 0; j < n16; j += 32) {
      // A: 16 rows of 32 bf16 a tile, the next 16 rows below; B: 16 pair rows a tile, the next
      // 16 columns to the right.
      const TileOperand at{a + i * lda, 16 * lda, 32, 2 * lda}, bt{bp + 2 * j, 32, 16 * ldb, 2 * ldb};
      float* cb = c + i * ldc + j;
      if (j + 32 <= n16) {
        if (two_rows) tile_block<2, 2>(at, bt, steps, cb, ldc, accumulate);
        else tile_block<1, 2>(at, bt, steps, cb, ldc, accumulate);
      } else {
        if (two_rows) tile_block<2, 1>(at, bt, steps, cb, ldc, accumulate);
        else tile_block<1, 1>(at, bt, steps, cb, ldc, accumulate);
      }
    }
  }
  _tile_release();
  // The rest: the pairs past k16 over the whole-tile part, then the tail columns and tail rows.
  if (k16 < k2) gemm_vnni_bf16_avx512(c, ldc, a + 2 * k16, lda, bp + k16 * ldb, ldb, m16, n16, k2 - k16, true);
  if (n16 < n) gemm_vnni_bf16_avx512(c + n16, ldc, a, lda, bp + 2 * n16, ldb, m16, n - n16, k2, accumulate);
  if (m16 < m) gemm_vnni_bf16_avx512(c + m16 * ldc, ldc, a + m16 * lda, lda, bp, ldb, m - m16, n, k2, accumulate);
}

}  // namespace nt::cpu
