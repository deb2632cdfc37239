// SPDX-License-Identifier: MIT
// Muon's bf16 Newton-Schulz iteration on AMX tiles, in one op (contract: kernels.h,
// newton_schulz_bf16; built with -mamx-*, called only when cpu_features().amx_bf16).
//
// Composed from the table's GEMMs (one thread a matrix while Muon runs its matrices side by
// side), every call would pack its operands into AMX's layouts again, and rows of a row-major
// operand 1-4 KiB apart fall into a few L1 sets. Here every operand lives in the tiles' own layouts,
// each tile 1 KiB contiguous, and the product that makes the next iterate writes it, rounded to
// bf16, straight into the three layouts the next iteration reads:
//   A layout of an (R, K) matrix: tile (I, s) holds rows 16 I.. and columns 32 s.. (16 rows of
//     32 bf16), at (I K/32 + s) tiles;
//   B layout of a (K, N) matrix: tile (J, s) holds the pairs of rows 32 s + 2 r, 32 s + 2 r + 1
//     of columns 16 J.. (row r: 16 interleaved pairs), at (J K/32 + s) tiles.
// The Gram product X X^T reads X's A layout and the B layout of X^T, whose tile (J, s) is the
// A layout's tile (J, s) transposed as 16 x 16 pairs; P X reads X's B layout. The two symmetric
// products (A = X X^T, A A^T) multiply only the blocks on and above the diagonal; the matrices
// made from them (bf16 A, the polynomial P) read the blocks below it transposed from above.
// The roundings are NewtonSchulzBf16's: A and A A^T in fp32, P = a I + b A + c A A in fp32 from
// them, then bf16 A, bf16 P and the bf16 iterate as operands; the last step writes fp32.
#include <omp.h>

#include <algorithm>

#include "backends/cpu/amx_tiles.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx512.h"
#include "kernels/kernels.h"

namespace nt::cpu {

namespace {

constexpr int64_t kTile = 512;      // bf16 elements of one tile
constexpr int64_t kGramSteps = 8;   // k-steps of a Gram block per pass: A's two tiles stay in L1

// The tile operand of a 32-row (or 32-column) block b of a layout with `steps` k-steps, from
// k-step s0: its two tiles are the layout's tiles (2 b, s) and (2 b + 1, s).
TileOperand block_operand(const uint16_t* layout, int64_t b, int64_t steps, int64_t s0) {
  return {layout + (2 * b * steps + s0) * kTile, steps * kTile, kTile, 64};
}

// A 16 x 32 bf16 tile as 16 registers of 64 bytes (a tile row each).
struct TileRows {
  __m512i r[16];
  void store(uint16_t* tile) const {
    for (int i = 0; i < 16; ++i) _mm512_store_si512(tile + 32 * i, r[i]);
  }
};

// Rows h * 16.. of a (32, 32) fp32 block c (row stride ldc) in bf16: an A tile.
TileRows a_tile(const float* c, int64_t ldc, int64_t h) {
  TileRows t;
  for (int i = 0; i < 16; ++i) {
    const float* row = c + (16 * h + i) * ldc;
    t.r[i] = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + 16), _mm512_loadu_ps(row)));
  }
  return t;
}

// Columns g * 16.. of a (32, 32) fp32 block c in bf16 as pairs of rows: a B tile (row r holds
// the 16 pairs (c[2r][j], c[2r + 1][j])).
TileRows b_tile(const float* c, int64_t ldc, int64_t g) {
  TileRows t;
  for (int r = 0; r < 16; ++r) {
    const float* r0 = c + 2 * r * ldc + 16 * g;
    t.r[r] = interleave_bf16(_mm512_loadu_ps(r0), _mm512_loadu_ps(r0 + ldc));
  }
  return t;
}

// The tile (I, s) of a layout with `steps` k-steps.
uint16_t* tile_at(uint16_t* layout, int64_t i, int64_t s, int64_t steps) { return layout + (i * steps + s) * kTile; }

// A (32, 32) fp32 block with row stride 32, transposed in place: four 16 x 16 quarters.
void transpose32(float* s) {
  for (int qi = 0; qi < 2; ++qi)
    for (int qj = qi; qj < 2; ++qj) {
      __m512i p[16], q[16];
      for (int i = 0; i < 16; ++i) {
        p[i] = _mm512_load_si512(s + (16 * qi + i) * 32 + 16 * qj);
        q[i] = _mm512_load_si512(s + (16 * qj + i) * 32 + 16 * qi);
      }
      transpose16(p);
      transpose16(q);
      for (int i = 0; i < 16; ++i) {
        _mm512_store_si512(s + (16 * qj + i) * 32 + 16 * qi, p[i]);
        _mm512_store_si512(s + (16 * qi + i) * 32 + 16 * qj, q[i]);
      }
    }
}

// The (32, 32) fp32 block c (row stride ldc) at rows i0, columns j0 of an (m, n) matrix, rounded
// to bf16 into the layouts given (null: skipped): `a` its A layout (K = n), `bt` the B layout of
// its transpose (K = n: the A tiles transposed as 16 x 16 pairs), `b` its B layout (K = m).
void emit_block(const float* c, int64_t ldc, int64_t i0, int64_t j0, int64_t m, int64_t n, uint16_t* a, uint16_t* bt,
                uint16_t* b) {
  if (a || bt)
    for (int64_t h = 0; h < 2; ++h) {
      TileRows t = a_tile(c, ldc, h);
      if (a) t.store(tile_at(a, i0 / 16 + h, j0 / 32, n / 32));
      if (bt) {
        transpose16(t.r);
        t.store(tile_at(bt, i0 / 16 + h, j0 / 32, n / 32));
      }
    }
  if (b)
    for (int64_t g = 0; g < 2; ++g) b_tile(c, ldc, g).store(tile_at(b, j0 / 16 + g, i0 / 32, m / 32));
}

// The blocks on and above the diagonal of C (m, m) = X X^T, X (m, K) given by its A layout `a`
// and the B layout `bt` of its transpose: 32 x 32 fp32 blocks, each contiguous (block (bi, bj)
// at bi m/32 + bj: a row-major C's rows, 2 KiB apart at m = 512, would crowd a few L1 sets). In
// passes of kGramSteps k-steps: a block row's two A tiles of a pass stay in L1
// while the blocks to its right stream theirs from L2.
void gram_upper(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* bt, int64_t m, int64_t k) {
  const int64_t steps = k / 32, blocks = m / 32;
#pragma omp parallel num_threads(ctx.threads())
  {
    load_full_tile_config();
    for (int64_t s0 = 0; s0 < steps; s0 += kGramSteps) {
      const int64_t n_steps = std::min(kGramSteps, steps - s0);
#pragma omp for schedule(dynamic, 1)
      for (int64_t bi = 0; bi < blocks; ++bi) {
        const TileOperand at = block_operand(a, bi, steps, s0);
        for (int64_t bj = bi; bj < blocks; ++bj)
          tile_block<2, 2>(at, block_operand(bt, bj, steps, s0), n_steps, c + 1024 * (bi * blocks + bj), 32, s0 > 0);
      }
    }
    _tile_release();
  }
}

// The symmetric (m, m) matrix S = cb G + cc G2, plus ca on the diagonal (G2 null: S = G), from
// the blocks on and above the diagonal that G and G2 hold (32 x 32 fp32 blocks, each contiguous,
// block (bi, bj) at bi m/32 + bj), rounded to bf16 into its A layout `a` and, unless null, its B
// layout `b` (S being symmetric, also the B layout of its transpose). Each block above the
// diagonal gives its mirror image below too: the mirror's A tiles are the block's B tiles
// transposed as 16 x 16 pairs, and its B tiles the block's A tiles transposed.
void emit_symmetric(const ExecContext& ctx, const float* g, const float* g2, float cb, float cc, float ca, int64_t m,
                    uint16_t* a, uint16_t* b) {
  const int64_t blocks = m / 32, steps = m / 32;
#pragma omp parallel for schedule(dynamic, 4) num_threads(ctx.threads())
  for (int64_t ij = 0; ij < blocks * blocks; ++ij) {
    const int64_t bi = ij / blocks, bj = ij % blocks;
    if (bj < bi) continue;  // made as the mirror of (bj, bi)
    alignas(64) float s[32 * 32];
    const float* src = g + 1024 * ij;
    for (int64_t e = 0; e < 1024; e += 16) {
      __m512 v = _mm512_load_ps(src + e);
      // As axpby and newton_schulz_poly compute it: (cb G) + (cc G2), then + ca.
      if (g2) v = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(cb), v),
                                _mm512_mul_ps(_mm512_set1_ps(cc), _mm512_load_ps(g2 + 1024 * ij + e)));
      _mm512_store_ps(s + e, v);
    }
    if (g2 && bi == bj)
      for (int i = 0; i < 32; ++i) s[i * 32 + i] += ca;
    for (int64_t h = 0; h < 2; ++h) {
      TileRows at = a_tile(s, 32, h), bt = b_tile(s, 32, h);
      at.store(tile_at(a, 2 * bi + h, bj, steps));
      if (b) bt.store(tile_at(b, 2 * bj + h, bi, steps));
      if (bi == bj) continue;
      transpose16(bt.r);  // the mirror's A tile: rows 32 bj + 16 h.., columns 32 bi..
      bt.store(tile_at(a, 2 * bj + h, bi, steps));
      if (!b) continue;
      transpose16(at.r);  // the mirror's B tile: columns 32 bi + 16 h.., pairs of rows 32 bj..
      at.store(tile_at(b, 2 * bi + h, bj, steps));
    }
  }
}

// X' = P X: P (m, m) in its A layout, X (m, n) in its B layout. With `out` X' is written in
// fp32, as (m, n) rows or, transposed, as (n, m) rows of X'^T; else rounded into its layouts as
// emit_block's a, bt, b. Each 32-column panel of X (m/16 tiles) stays in L1 while P's block
// rows stream from L2.
void product(const ExecContext& ctx, const uint16_t* p, const uint16_t* x, int64_t m, int64_t n, float* out,
             bool transposed, uint16_t* a, uint16_t* bt, uint16_t* b) {
  const int64_t steps = m / 32;
#pragma omp parallel num_threads(ctx.threads())
  {
    load_full_tile_config();
    alignas(64) float stage[32 * 32];
#pragma omp for schedule(static)
    for (int64_t bj = 0; bj < n / 32; ++bj) {
      const TileOperand xt = block_operand(x, bj, steps, 0);
      for (int64_t bi = 0; bi < m / 32; ++bi) {
        const TileOperand pt = block_operand(p, bi, steps, 0);
        if (out && !transposed) {
          tile_block<2, 2>(pt, xt, steps, out + 32 * (bi * n + bj), n, false);
          continue;
        }
        tile_block<2, 2>(pt, xt, steps, stage, 32, false);
        if (!out) {
          emit_block(stage, 32, 32 * bi, 32 * bj, m, n, a, bt, b);
          continue;
        }
        transpose32(stage);  // block (bj, bi) of X'^T
        for (int i = 0; i < 32; ++i)
          for (int j = 0; j < 32; j += 16)
            _mm512_storeu_ps(out + (32 * bj + i) * m + 32 * bi + j, _mm512_load_ps(stage + 32 * i + j));
      }
    }
    _tile_release();
  }
}

}  // namespace

bool newton_schulz_bf16_amx(const ExecContext& ctx, float* x, bool transposed, float scale, float* g, float* g2,
                            uint16_t* work, int64_t m, int64_t n, int steps, bool gram) {
  if (gram || m % 32 != 0 || n % 32 != 0 || m < 32 || m > n || steps < 1) return false;
  const int64_t mn = m * n, mm = m * m;
  // The iterate's A layout, its transpose's B layout, its B layout (two: P X reads one while it
  // writes the other); bf16 A's A and B layouts (A^T = A); P's A layout. g and g2 hold A and
  // A A^T as contiguous 32 x 32 blocks.
  uint16_t *xa = work, *xbt = xa + mn, *xb[2] = {xbt + mn, xbt + 2 * mn};
  uint16_t *aa = xbt + 3 * mn, *ab = aa + mm, *pa = ab + mm;
  // X0 = scale x (or x^T), rounded into its layouts block by block.
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctx.threads())
  for (int64_t bi = 0; bi < m / 32; ++bi)
    for (int64_t bj = 0; bj < n / 32; ++bj) {
      alignas(64) float s[32 * 32];
      const float* src = transposed ? x + 32 * (bj * m + bi) : x + 32 * (bi * n + bj);
      const int64_t ld = transposed ? m : n;
      for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 32; j += 16)
          _mm512_store_ps(s + 32 * i + j, _mm512_mul_ps(_mm512_set1_ps(scale), _mm512_loadu_ps(src + i * ld + j)));
      if (transposed) transpose32(s);
      emit_block(s, 32, 32 * bi, 32 * bj, m, n, xa, xbt, xb[0]);
    }
  for (int it = 0; it < steps; ++it) {
    gram_upper(ctx, g, xa, xbt, m, n);                             // A = X X^T
    emit_symmetric(ctx, g, nullptr, 1.0f, 0.0f, 0.0f, m, aa, ab);  // bf16 A, both operands of A A^T
    gram_upper(ctx, g2, aa, ab, m, m);                             // A A^T = A A
    emit_symmetric(ctx, g, g2, kNewtonSchulzB, kNewtonSchulzC, kNewtonSchulzA, m, pa, nullptr);  // P
    const bool last = it + 1 == steps;
    product(ctx, pa, xb[it & 1], m, n, last ? x : nullptr, transposed, xa, xbt, xb[(it + 1) & 1]);  // X' = P X
  }
  return true;
}

}  // namespace nt::cpu
