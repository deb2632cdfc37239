// SPDX-License-Identifier: MIT
// Our fp32 GEMMs whose B is packed whole, once a call (contracts in gemm.h), on the fp32 pair
// tile (gemm_pairs_f32_avx512: 6 x 32, near a core's fp32 peak on warm operands), in three
// forms: C = or += A B^T (sgemm_nt_avx512, B (n, k)); C = or += A B (sgemm_nn_avx512, B (k, n));
// and the Gram product C = A A^T (gram_f32_avx512), of which only the tiles that reach the upper
// triangle are multiplied (53 % of the FLOPs at m = 512), then mirrored. They take the products
// of fp32 runs where oneDNN lags (gemm_routes.cc says which).
//
// B is packed by all threads into 32-column panels of k/2 pair-rows (the tile's layout: pair-row
// kk of panel p holds the pairs (B^T(2 kk, j), B^T(2 kk + 1, j)) for j = 32 p .. 32 p + 31; the
// tile masks a partial panel's loads past n). From B (n, k) that is a transpose of 64-bit words
// (simd_avx2.h's); from B (k, n), rows 2 kk and 2 kk + 1 interleaved. A's rows are read in
// place. Each thread takes blocks of kBlockRows rows of A (in L2) and runs panels over them,
// kDepth pair-rows of a panel at a time (32 KiB, in L1 across the block's 16 tiles). Where the
// packed panels outgrow kPartBytes, or the row blocks are too few to keep the threads evenly
// busy, the panels are split into parts, taken part by part: a part stays in L3 while every row
// block passes over it (at the head's 1024 x 8192 x 512, each row block would stream all 16 MiB
// of panels from memory). Built with -mavx512*; called only after a CPUID check.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx2.h"
#include "backends/cpu/simd_avx512.h"
#include "backends/cpu/mirror_upper.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;            // columns of a B panel and of a tile
constexpr int64_t kPairRow = 2 * kPanel;  // floats of a panel's pair-row
constexpr int64_t kBlockRows = 96;        // rows of A a thread runs a panel over: 16 tiles
constexpr int64_t kDepth = 128;           // pair-rows of a panel a pass of the block's tiles reads
constexpr int64_t kPartBytes = 4 << 20;   // packed panels a part holds, at most

// Panel p of B^T (B: n rows of k) into dst: k/2 pair-rows of 32 words (zeros past n).
void pack_panel_nt(float* dst, const float* b, int64_t n, int64_t k, int64_t p) {
  const int64_t j0 = kPanel * p, cols = n - j0 < kPanel ? n - j0 : kPanel, k2 = k / 2;
  if (cols < kPanel) std::memset(dst, 0, size_t(k2 * kPairRow) * sizeof(float));
  transpose_64bit(reinterpret_cast<uint64_t*>(dst), kPanel, reinterpret_cast<const uint64_t*>(b + j0 * k), k2, cols,
                  k2);
}

// Panel p of B (k rows of n) into dst: pair-row kk interleaves rows 2 kk and 2 kk + 1. Panel by
// panel, so that each thread writes its panels front to back (store_f32_pair_row writes a
// pair-row of every panel, panel_floats apart: a power of two at the Newton-Schulz squares).
void pack_panel_nn(float* dst, const float* b, int64_t n, int64_t k, int64_t p) {
  const int64_t j0 = kPanel * p;
  const __mmask16 m0 = lanes16(n - j0), m1 = lanes16(n - j0 - 16);
  for (int64_t kk = 0; kk < k / 2; ++kk) {
    const float* r0 = b + 2 * kk * n + j0;
    const float* r1 = r0 + n;
    store_f32_pairs(dst + kk * kPairRow, load_masked_ps(m0, r0), load_masked_ps(m0, r1));
    store_f32_pairs(dst + kk * kPairRow + kPanel, load_masked_ps(m1, r0 + 16), load_masked_ps(m1, r1 + 16));
  }
}

enum class Form {
  kNt,     // C = A B^T, B (n, k)
  kNn,     // C = A B, B (k, n)
  kUpper,  // C's upper triangle (and some tiles below it) of A A^T, b == a: the Gram product
};

// relu2_a (Form::kNt only): each unit first copies its row block of A through the activation
// (relu2_row: relu2_fwd's own loop, the same values) into the thread's scratch (in L2, where the
// block stays across the unit's panels anyway), and the tiles read that: the activation is never
// written out, and no pass of its own reads fc.
template <Form F>
bool sgemm_panels(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                  bool add, bool relu2_a = false) {
  if (m < 1 || n < 1 || k < 2 || k % 2 != 0) return false;
  const int64_t panels = (n + kPanel - 1) / kPanel, k2 = k / 2, panel_floats = k2 * kPairRow;
  float* const packed =
      static_cast<float*>(thread_scratch(ctx, kScratchSgemmB, size_t(panels * panel_floats) * sizeof(float)));
  // Units of work: a row block against a part of the panels, part-major (thread t's units are
  // contiguous under the static schedule, so it works through whole parts).
  const int64_t threads = ctx.threads(), blocks = (m + kBlockRows - 1) / kBlockRows;
  const int64_t packed_bytes = panels * panel_floats * int64_t(sizeof(float));
  const int64_t parts =
      std::min(panels, std::max((8 * threads + blocks - 1) / blocks, (packed_bytes + kPartBytes - 1) / kPartBytes));
  const int64_t units = blocks * parts;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("sgemm panels");
    float* const act =
        relu2_a ? static_cast<float*>(thread_scratch(ctx, kScratchSgemmRelu2A, size_t(kBlockRows * k) * sizeof(float)))
                : nullptr;
#pragma omp for schedule(static)
    for (int64_t p = 0; p < panels; ++p) {
      if (F == Form::kNn) pack_panel_nn(packed + p * panel_floats, b, n, k, p);
      else pack_panel_nt(packed + p * panel_floats, b, n, k, p);
    }
#pragma omp for schedule(static) nowait
    for (int64_t u = 0; u < units; ++u) {
      const int64_t i0 = (u % blocks) * kBlockRows, part = u / blocks;
      const int64_t block_rows = m - i0 < kBlockRows ? m - i0 : kBlockRows;
      const int64_t p0 = panels * part / parts, p1 = panels * (part + 1) / parts;
      const float* ab = a + i0 * k;  // the block's rows of A, as the tiles read them
      if (act) relu2_row(act, ab, block_rows * k), ab = act;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t cols = n - kPanel * p < kPanel ? n - kPanel * p : kPanel;
        // The Gram product: only the rows that reach the panel's columns (the diagonal tile's
        // lower part too, overwritten by the mirror).
        const int64_t rows = F == Form::kUpper ? std::min(block_rows, kPanel * (p + 1) - i0) : block_rows;
        if (rows <= 0) continue;
        for (int64_t d0 = 0; d0 < k2; d0 += kDepth)
          gemm_pairs_f32_avx512(c + i0 * n + kPanel * p, n, ab + 2 * d0, k,
                                packed + p * panel_floats + d0 * kPairRow, kPairRow, rows, cols,
                                k2 - d0 < kDepth ? k2 - d0 : kDepth, add || d0 > 0);
      }
    }
  }
  if (F == Form::kUpper) cpu::mirror_upper_triangle(ctx, c, m);
  return true;
}

}  // namespace

bool sgemm_nt_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     bool add, bool relu2_a) {
  return sgemm_panels<Form::kNt>(ctx, c, a, b, m, n, k, add, relu2_a);
}

bool sgemm_nn_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     bool add) {
  return sgemm_panels<Form::kNn>(ctx, c, a, b, m, n, k, add);
}

bool gram_f32_avx512(const ExecContext& ctx, float* c, const float* a, int64_t m, int64_t k) {
  return sgemm_panels<Form::kUpper>(ctx, c, a, a, m, m, k, false);
}

}  // namespace nt::cpu
