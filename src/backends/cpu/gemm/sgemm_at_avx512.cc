// SPDX-License-Identifier: MIT
// Our fp32 GEMM for A transposed (contract in gemm.h, sgemm_at_avx512): C (m, n) = A^T B or
// C += A^T B with A (k, m) and B (k, n) fp32 rows and k long, on the fp32 pair tile
// (gemm_pairs_f32_avx512): the weight gradients dW = dY^T X of fp32 runs, summed over a step's
// tokens, where oneDNN lags (gemm_routes.cc says which).
//
// Blocked along k as in GotoBLAS (gemm_at_avx512.cc is the bf16 sibling). For each block of kc
// rows of A and B, the threads pack the block of B together into 32-column pair panels (kc keeps
// it within kBlockBytes, in L2, and a panel's part within L1); then each walks its own rows of C
// (whole tiles of them) kGroup at a time: it transposes those kGroup columns of A's block into
// rows of kc (so that the tile reads a row's pairs in place, in L1) and runs them against every
// panel, the tiles adding the block's sum to C. Where k is short enough for B to be packed whole
// (the head's weight gradient, a chunk of tokens), the loops turn around: B is packed once and
// each group of C's rows runs through every block while it stays in L2. Packing moves (m + n) k
// floats against the product's 2 m n k FLOPs: it pays where n is wide. (The threads share the
// packing: each packing the whole block for itself is slower.)
// Built with -mavx512*; called only after a CPUID check.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx512.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;              // columns of a B panel and of a tile
constexpr int64_t kPairRow = 2 * kPanel;    // floats of a panel's pair-row
constexpr int64_t kTileRows = 6;            // rows of the pair tile
constexpr int64_t kGroup = 8 * kTileRows;   // rows of C (columns of A) packed together
constexpr int64_t kMaxDepth = 256;          // k of a block at most: a panel's block is 32 KiB (L1)
constexpr int64_t kBlockBytes = 512 << 10;  // the packed block of B, at most
constexpr int64_t kPad = 16;                // floats past a packed row of A (rows off L1's sets)
constexpr int64_t kWholeBytes = 4 << 20;    // every block of B packed at once, at most

// Rows k0 .. k0 + kb of B (n columns) in panels of 32 columns, panel p at dst + p kb 32: kb / 2
// pair-rows of 32 pairs; here pair-row kk.
void pack_b(float* dst, const float* b, int64_t n, int64_t k0, int64_t kb, int64_t kk) {
  const float* const r0 = b + (k0 + 2 * kk) * n;
  store_f32_pair_row(dst + kk * kPairRow, kb * kPanel, r0, r0 + n, n);
}

// Columns j0 .. j0 + cols - 1 of A's rows k0 .. k0 + kb (ld apart) as cols rows of kb floats,
// row r at dst + r ldd: (A(k0, j0 + r), ..., A(k0 + kb - 1, j0 + r)), in 16 x 16 blocks.
void pack_a(float* dst, int64_t ldd, const float* a, int64_t ld, int64_t j0, int64_t cols, int64_t k0, int64_t kb) {
  for (int64_t q = 0; q < kb; q += 16) {
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 in = lanes16(cols - j);
      __m512i t[16];
#pragma GCC unroll 16
      for (int e = 0; e < 16; ++e)
        t[e] = q + e < kb ? load_masked_epi32(in, a + (k0 + q + e) * ld + j0 + j) : _mm512_setzero_si512();
      transpose16(t);
      const int64_t rows = cols - j < 16 ? cols - j : 16;
      for (int64_t r = 0; r < rows; ++r) _mm512_storeu_si512(dst + (j + r) * ldd + q, t[r]);
    }
  }
}

// k in blocks of kc (even), as few as keep the packed block of B (n columns) within kBlockBytes
// and a panel's part of it within kMaxDepth rows.
int64_t block_depth(int64_t n, int64_t k) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  int64_t kc_max = kBlockBytes / (panels * kPanel * int64_t(sizeof(float)));
  kc_max = kc_max < 64 ? 64 : kc_max > kMaxDepth ? kMaxDepth : kc_max & ~int64_t(1);
  const int64_t blocks = (k + kc_max - 1) / kc_max;
  return ((k + blocks - 1) / blocks + 1) & ~int64_t(1);
}

}  // namespace

bool sgemm_at_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     bool add) {
  if (m < 1 || n < 1 || k < 2 || k % 2 != 0) return false;
  const int64_t tiles = (m + kTileRows - 1) / kTileRows, kc = block_depth(n, k);
  const int64_t panels = (n + kPanel - 1) / kPanel, lda = kc + kPad, blocks = (k + kc - 1) / kc;
  // Where every block of B fits in kWholeBytes packed, B is packed whole once, and each group of
  // C's rows takes all the blocks in turn while it stays in L2: C is loaded and stored once a
  // call, not once a block (the head's weight gradient, C 8192 x 512 and k 1024 a chunk, would
  // read C from memory four times). So the blocks are taken in stages packed together: all of
  // them where they fit, else one.
  const int64_t block_floats = panels * kc * kPanel;
  const int64_t per_stage = blocks * block_floats * int64_t(sizeof(float)) <= kWholeBytes ? blocks : 1;
  // The calling thread's scratch, shared by the region's threads: each packs a share of a stage.
  float* const bp =
      static_cast<float*>(thread_scratch(ctx, kScratchSgemmAtB, size_t(per_stage * block_floats) * sizeof(float)));
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("sgemm at");
    // The threads' shares of C in whole tiles of rows.
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t i0 = kTileRows * (tiles * t / nt), i1 = std::min(m, kTileRows * (tiles * (t + 1) / nt));
    // (+ 16 floats: a block's last packed row is written 16 floats at a time.)
    float* const ap =
        static_cast<float*>(thread_scratch(ctx, kScratchSgemmAtA, size_t(kGroup * lda + 16) * sizeof(float)));
    for (int64_t s0 = 0; s0 < blocks; s0 += per_stage) {
      // The stage's blocks of B (block q at bp + (q - s0) block_floats), then each group of C's
      // rows through all of them.
      for (int64_t q = s0; q < s0 + per_stage; ++q) {
        const int64_t k0 = q * kc, kb = std::min(kc, k - k0);
#pragma omp for schedule(static) nowait
        for (int64_t kk = 0; kk < kb / 2; ++kk) pack_b(bp + (q - s0) * block_floats, b, n, k0, kb, kk);
      }
#pragma omp barrier
      for (int64_t i = i0; i < i1; i += kGroup) {
        const int64_t rows = std::min(kGroup, i1 - i);
        for (int64_t q = s0; q < s0 + per_stage; ++q) {
          const int64_t k0 = q * kc, kb = std::min(kc, k - k0);
          const float* const bq = bp + (q - s0) * block_floats;
          pack_a(ap, lda, a, m, i, rows, k0, kb);
          for (int64_t p = 0; p < panels; ++p)
            gemm_pairs_f32_avx512(c + i * n + kPanel * p, n, ap, lda, bq + p * kb * kPanel, kPairRow, rows,
                                  std::min(kPanel, n - kPanel * p), kb / 2, add || k0 > 0);
        }
      }
#pragma omp barrier
    }
  }
  return true;
}

}  // namespace nt::cpu
