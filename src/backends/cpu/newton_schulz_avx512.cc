// SPDX-License-Identifier: MIT
// Muon's bf16 Newton-Schulz iteration in one op on the AVX-512-BF16 register tile
// (gemm_vnni_bf16_avx512). Contract: kernels.h, newton_schulz_bf16; built with -mavx512*, in the
// table where the CPU has AVX-512-BF16 and no AMX (which has its own, newton_schulz_amx.cc).
// It takes both of NewtonSchulzBf16's iterations: the plain one (square matrices) and, with
// `gram`, the one on the Gram matrix (long matrices; gram_iteration below).
//
// Composed from the table's GEMMs, one thread per matrix while Muon runs its matrices side by
// side, every oneDNN call would pack its operands again, and the upper triangles of X X^T and A A
// go through four block rows of narrower products. Here the operands stay in the tile's layouts
// from one product to the next:
//   xa  (m, n) bf16 rows: X, the A operand of X X^T;
//   xbt the B operand of X X^T (X^T, k = n): panel p (columns 32 p.. of X^T, rows of X) holds
//       n/2 pair-rows of 32 pairs, pair-row kk the pairs (X[j][2 kk], X[j][2 kk + 1]);
//   xb  the B operand of P X (k = m), two of them (P X reads one while it writes the other):
//       panel q holds m/2 pair-rows, pair-row kk the pairs (X[2 kk][j], X[2 kk + 1][j]);
//   aa  (m, m) bf16 rows and ab (panels of pairs, as xb): A, both operands of A A (A^T = A);
//   pa  (m, m) bf16 rows: P = a I + b A + c A A.
// Each panel is contiguous (k/2 pair-rows of 128 bytes): a row-major B operand's pair-rows,
// 2 KiB apart at m = 512, would fall into a few L1 sets.
// X X^T and A A multiply the 32-column panels on and above the diagonal only (53 % of the
// product at m = 512), and the next iterate's three layouts are written from each 32 x 32
// block of P X as it is made. The roundings are NewtonSchulzBf16's: A and A A in fp32, P by the
// same axpby in fp32, bf16 A, P and iterate as operands, the last step in fp32; only the order of
// the fp32 additions inside the products differs.
#include <omp.h>

#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"
#include "backends/cpu/simd_avx512.h"
#include "kernels/kernels.h"
#include "composed/newton_schulz_bf16.h"
#include "backends/cpu/mirror_upper.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;            // columns of a B panel, rows and columns of a block
constexpr int64_t kPairRow = 2 * kPanel;  // bf16 elements of a panel's pair-row
uint32_t* words(uint16_t* p) { return reinterpret_cast<uint32_t*>(p); }

// The 32 x 32 fp32 block s (row stride 32) at rows i0, columns j0 of the (m, n) iterate, rounded
// to bf16 into its three layouts; xbt's part is the xa block just written, its pairs transposed.
void emit_iterate(const float* s, int64_t i0, int64_t j0, int64_t m, int64_t n, uint16_t* xa, uint16_t* xbt,
                  uint16_t* xb) {
  for (int64_t r = 0; r < kPanel; ++r) {
    const float* row = s + r * kPanel;
    const __m512 lo = _mm512_loadu_ps(row), hi = _mm512_loadu_ps(row + 16);
    _mm512_storeu_si512(xa + (i0 + r) * n + j0, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
  uint16_t* panel = xb + (j0 / kPanel) * (m / 2) * kPairRow + (i0 / 2) * kPairRow;
  for (int64_t rr = 0; rr < kPanel / 2; ++rr) {
    const float* r0 = s + 2 * rr * kPanel;
    uint16_t* dst = panel + rr * kPairRow;
    _mm512_storeu_si512(dst, interleave_bf16(_mm512_loadu_ps(r0), _mm512_loadu_ps(r0 + kPanel)));
    _mm512_storeu_si512(dst + kPanel, interleave_bf16(_mm512_loadu_ps(r0 + 16), _mm512_loadu_ps(r0 + kPanel + 16)));
  }
  // Panel i0/32 of X^T, pair-rows j0/2..: 16 pair-rows of the block's 32 rows.
  transpose_32bit(words(xbt) + (i0 / kPanel) * (n / 2) * kPanel + (j0 / 2) * kPanel, kPanel,
                  words(xa) + (i0 * n + j0) / 2, n / 2, kPanel, kPanel / 2);
}

// The symmetric (m, m) fp32 matrix g (whole) rounded to bf16: rows into a (unless null), panels
// of pairs of rows into b.
void emit_square(const ExecContext& ctx, const float* g, int64_t m, uint16_t* a, uint16_t* b) {
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
  for (int64_t rr = 0; rr < m / 2; ++rr) {
    const float *r0 = g + 2 * rr * m, *r1 = r0 + m;
    for (int64_t j = 0; j < m; j += 16) {
      const __m512 v0 = _mm512_loadu_ps(r0 + j), v1 = _mm512_loadu_ps(r1 + j);
      if (a) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + 2 * rr * m + j), bf16x16(v0));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + (2 * rr + 1) * m + j), bf16x16(v1));
      }
      uint16_t* dst = b + (j / kPanel) * (m / 2) * kPairRow + rr * kPairRow + 2 * (j % kPanel);
      _mm512_storeu_si512(dst, interleave_bf16(v0, v1));
    }
  }
}

// The panels on and above the diagonal of the symmetric C (m, m) = A B, A (m, 2 k2) bf16 rows
// (lda elements a row), B in panels of k2 pair-rows: panel p is multiplied by the rows that reach
// it, 0 .. 32 p + 31. Then mirrored: C exactly symmetric.
void gram_upper(const ExecContext& ctx, float* c, const uint16_t* a, int64_t lda, const uint16_t* b, int64_t m,
                int64_t k2) {
  const int64_t panels = m / kPanel;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx.threads())
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t p = panels - 1 - q;  // longest first
    gemm_vnni_bf16_avx512(c + kPanel * p, m, a, lda, b + p * k2 * kPairRow, kPairRow, kPanel * (p + 1), kPanel, k2,
                          false);
  }
  cpu::mirror_upper_triangle(ctx, c, m);
}

// X' = P X: P (m, m) bf16 rows, X in xb's panels. With `out`, X' is written in fp32 as (m, n) rows
// or, transposed, as (n, m) rows of X'^T; else rounded into the next iterate's layouts. Each
// panel of X stays in L1 while P's rows stream from L2.
void product(const ExecContext& ctx, const uint16_t* p, const uint16_t* xb, int64_t m, int64_t n, float* out,
             bool transposed, uint16_t* xa, uint16_t* xbt, uint16_t* xb_next) {
#pragma omp parallel num_threads(ctx.threads())
  {
    alignas(64) float stage[kPanel * kPanel];
#pragma omp for schedule(static)
    for (int64_t bj = 0; bj < n / kPanel; ++bj) {
      const uint16_t* panel = xb + bj * (m / 2) * kPairRow;
      for (int64_t bi = 0; bi < m / kPanel; ++bi) {
        const uint16_t* rows = p + kPanel * bi * m;
        if (out && !transposed) {
          gemm_vnni_bf16_avx512(out + kPanel * (bi * n + bj), n, rows, m, panel, kPairRow, kPanel, kPanel, m / 2,
                                false);
          continue;
        }
        gemm_vnni_bf16_avx512(stage, kPanel, rows, m, panel, kPairRow, kPanel, kPanel, m / 2, false);
        if (out)  // block (bj, bi) of X'^T
          transpose_32bit(reinterpret_cast<uint32_t*>(out + kPanel * (bj * m + bi)), m,
                          reinterpret_cast<const uint32_t*>(stage), kPanel, kPanel, kPanel);
        else
          emit_iterate(stage, kPanel * bi, kPanel * bj, m, n, xa, xbt, xb_next);
      }
    }
  }
}

// Long matrices: NewtonSchulzBf16::run_on_gram's iteration on X0 (already in xa, xbt, xb), with
// its roundings. G0 = X0 X0^T, the product Q of the steps' polynomials and X = Q X0 on the bf16
// tile, in the layouts above (composed, those three would go through oneDNN, a tall matrix
// transposed there and back); the chain that carries G from
// step to step is the composed version's own, newton_schulz_gram_step on this backend's table
// (G G, P G, P (P G) in fp32 on symmetric_product_f32_avx512). x is free once X0 is in bf16: it
// holds the fp32 R = P G and Q (2 m^2 <= m n).
void gram_iteration(const ExecContext& ctx, float* x, bool transposed, float* g, float* g2, uint16_t* xa, uint16_t* xbt,
                    const uint16_t* xb, uint16_t* pa, uint16_t* qb, int64_t m, int64_t n, int steps) {
  const KernelTable& k = cpu_kernels();
  float *r = x, *q = x + m * m;
  gram_upper(ctx, g, xa, n, xbt, m, n / 2);  // G0 = X0 X0^T
  for (int it = 0; it < steps; ++it) {
    newton_schulz_gram_step(k, ctx, g, g2, r, m, it + 1 == steps);  // P into g2; G' into g
    if (it == 0) {
      std::memcpy(q, g2, size_t(m * m) * sizeof(float));
    } else {  // Q = P Q, from bf16 copies: P's rows, Q's panels (both symmetric, and they commute)
      to_bf16_avx512(ctx, pa, g2, m * m);
      emit_square(ctx, q, m, nullptr, qb);
      gram_upper(ctx, q, pa, m, qb, m, m / 2);
    }
  }
  to_bf16_avx512(ctx, pa, q, m * m);
  product(ctx, pa, xb, m, n, x, transposed, nullptr, nullptr, nullptr);  // X = Q X0
}

}  // namespace

bool newton_schulz_bf16_avx512(const ExecContext& ctx, float* x, bool transposed, float scale, float* g, float* g2,
                               uint16_t* work, int64_t m, int64_t n, int steps, bool gram) {
  if (m % kPanel != 0 || n % kPanel != 0 || m < kPanel || m > n || steps < 1) return false;
  if (gram && !newton_schulz_on_gram(m, n)) return false;  // x holds two m x m matrices on the way
  const int64_t mn = m * n, mm = m * m;
  uint16_t *xa = work, *xbt = xa + mn, *xb[2] = {xbt + mn, xbt + 2 * mn};
  uint16_t *aa = xbt + 3 * mn, *ab = aa + mm, *pa = ab + mm;
  // X0 = scale x (or x^T), rounded into its layouts block by block.
#pragma omp parallel for collapse(2) schedule(static) num_threads(ctx.threads())
  for (int64_t bi = 0; bi < m / kPanel; ++bi)
    for (int64_t bj = 0; bj < n / kPanel; ++bj) {
      alignas(64) float s[kPanel * kPanel];
      if (transposed)
        transpose_32bit(reinterpret_cast<uint32_t*>(s), kPanel,
                        reinterpret_cast<const uint32_t*>(x + kPanel * (bj * m + bi)), m, kPanel, kPanel);
      for (int64_t i = 0; i < kPanel; ++i)
        for (int64_t j = 0; j < kPanel; j += 16) {
          const float* src = transposed ? s + i * kPanel + j : x + (kPanel * bi + i) * n + kPanel * bj + j;
          _mm512_store_ps(s + i * kPanel + j, _mm512_mul_ps(_mm512_set1_ps(scale), _mm512_loadu_ps(src)));
        }
      emit_iterate(s, kPanel * bi, kPanel * bj, m, n, xa, xbt, xb[0]);
    }
  if (gram) {
    gram_iteration(ctx, x, transposed, g, g2, xa, xbt, xb[0], pa, ab, m, n, steps);
    return true;
  }
  for (int it = 0; it < steps; ++it) {
    gram_upper(ctx, g, xa, n, xbt, m, n / 2);          // A = X X^T
    emit_square(ctx, g, m, aa, ab);                    // bf16 A, both operands of A A
    gram_upper(ctx, g2, aa, m, ab, m, m / 2);          // A A
    newton_schulz_poly(cpu_kernels(), ctx, g2, g, m);  // P = a I + b A + c A A
    to_bf16_avx512(ctx, pa, g2, mm);
    const bool last = it + 1 == steps;
    product(ctx, pa, xb[it & 1], m, n, last ? x : nullptr, transposed, xa, xbt, xb[(it + 1) & 1]);  // X' = P X
  }
  return true;
}

}  // namespace nt::cpu
