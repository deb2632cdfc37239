// SPDX-License-Identifier: MIT
#include "composed/newton_schulz_bf16.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "composed/upper_triangle.h"
#include "core/check.h"

namespace nt {

NsPoly ns_poly(NsCoeffs coeffs, int iteration) {
  // Polar Express (Amsel, Persson, Musco, Gower 2025), computed for five iterations with a
  // safety factor of 2e-2 and a cushion of 2.
  static constexpr NsPoly kPolarExpress[kPolarExpressSteps] = {
      {8.156554524902461f, -22.48329292557795f, 15.878769915207462f},
      {4.042929935166739f, -2.808917465908714f, 0.5000178451051316f},
      {3.8916678022926607f, -2.772484153217685f, 0.5060648178503393f},
      {3.285753657755655f, -2.3681294933425376f, 0.46449024233003106f},
      {2.3465413258596377f, -1.7097828382687081f, 0.42323551169305323f}};
  if (coeffs == NsCoeffs::kQuintic) return kQuinticPoly;
  NT_CHECK(iteration >= 0 && iteration < kPolarExpressSteps, "Polar Express has %d iterations, not %d",
           kPolarExpressSteps, iteration + 1);
  return kPolarExpress[iteration];
}

float ns_norm_scale(NsCoeffs coeffs, double frobenius_norm) {
  if (coeffs == NsCoeffs::kQuintic) return 1.0f / (float(frobenius_norm) + 1e-7f);
  return float(1.0 / (frobenius_norm * 1.01 + 1e-6));
}

void newton_schulz_poly(const KernelTable& k, const ExecContext& ctx, float* b, const float* a, int64_t m, NsPoly p) {
  k.axpby(ctx, b, a, m * m, p.b, p.c);                  // b A + c A A
  for (int64_t i = 0; i < m; ++i) b[i * m + i] += p.a;  // + a I
}

namespace {
// The upper triangle's block row [i0, i0 + rows), C[i0:, i0:m] = A[i0:, :] B[:, i0:m], where
// B[:, i0:m] = B[i0:m, :]^T (B is symmetric): a product over contiguous rows, whose compact
// (rows, m - i0) result the caller's gemm writes at c + i0 m and which is spread out here to
// C's row stride in place (last row first: each row's place lies at or past where it was).
template <class Gemm>
void symmetric_upper(const ExecContext& ctx, float* c, int64_t m, Gemm&& gemm) {
  for_each_upper_block_row(m, [&](int64_t i0, int64_t rows) {
    const int64_t w = m - i0;
    gemm(i0, rows);
    for (int64_t j = rows - 1; j >= 0; --j)
      std::memmove(c + (i0 + j) * m + i0, c + i0 * m + j * w, size_t(w) * sizeof(float));
  });
  mirror_upper_triangle(ctx, c, m);
}

// The backend's one op for the product, where it has one and takes the size.
bool symmetric_product_op(const KernelTable& k, const ExecContext& ctx, float* c, const float* a, const float* b,
                          int64_t m) {
  return k.symmetric_product_f32 && k.symmetric_product_f32(ctx, c, a, b, m);
}
}  // namespace

void symmetric_product(const KernelTable& k, const ExecContext& ctx, float* c, const float* a, const float* b,
                       int64_t m) {
  if (symmetric_product_op(k, ctx, c, a, b, m)) return;
  if (ctx.threads() != 1) return k.matmul(ctx, c, a, b, m, m, m, false, false, 0.0f);
  symmetric_upper(ctx, c, m, [&](int64_t i0, int64_t rows) {
    k.matmul(ctx, c + i0 * m, a + i0 * m, b + i0 * m, rows, m - i0, m, false, true, 0.0f);
  });
}

void symmetric_square(const KernelTable& k, const ExecContext& ctx, float* c, const float* a, int64_t m) {
  if (!symmetric_product_op(k, ctx, c, a, a, m)) k.matmul(ctx, c, a, a, m, m, m, false, true, 0.0f);  // a a^T
}

void symmetric_product_bf16(const KernelTable& k, const ExecContext& ctx, float* c, const uint16_t* a,
                            const uint16_t* b, int64_t m) {
  if (ctx.threads() != 1) return k.matmul_bf16(ctx, c, a, b, m, m, m, false, false, 0.0f);
  symmetric_upper(ctx, c, m, [&](int64_t i0, int64_t rows) {
    k.matmul_bf16(ctx, c + i0 * m, a + i0 * m, b + i0 * m, rows, m - i0, m, false, true, 0.0f);
  });
}

void newton_schulz_gram_step(const KernelTable& k, const ExecContext& ctx, float* a, float* b, float* r, int64_t m,
                             bool last, NsPoly p) {
  symmetric_square(k, ctx, b, a, m);       // G G
  newton_schulz_poly(k, ctx, b, a, m, p);  // P = a I + b G + c G G
  if (last) return;
  symmetric_product(k, ctx, r, b, a, m);  // P G
  symmetric_product(k, ctx, a, b, r, m);  // G' = P (P G)
}

// The iterate X stays in bf16 between iterations, as in the reference Muon implementations:
// each iteration is three GEMMs and a few passes over the small (m, m) matrices, with no fp32
// pass over the (m, n) iterate. The polynomial's linear term is folded into the last GEMM,
//   X' = a X + (b A + c A A) X = (a I + b A + c A A) X,
// and the last iteration writes fp32 straight into x.
void NewtonSchulzBf16::run(const KernelTable& k, const ExecContext& ctx, float* x, float* a, float* b, int64_t m,
                           int64_t n, int steps, NsCoeffs coeffs) {
  NT_CHECK(m <= n, "newton_schulz wants rows <= cols (%ld, %ld)", long(m), long(n));
  NT_CHECK(k.to_bf16 && k.matmul_bf16 && k.matmul_bf16_out, "backend %s has no bf16 GEMM", k.name);
  if (run_one_op(k, ctx, x, false, a, b, m, n, steps, coeffs)) return;
  k.axpby(ctx, x, x, m * n, 0.0f, ns_norm_scale(coeffs, std::sqrt(k.sum_squares(ctx, x, m * n))));
  if (steps <= 0) return;
  if (xh_.size() < size_t(m * n)) xh_.resize(size_t(m * n)), xh2_.resize(size_t(m * n));
  if (ah_.size() < size_t(m * m)) ah_.resize(size_t(m * m)), bh_.resize(size_t(m * m));
  if (newton_schulz_bf16_on_gram(k, m, n)) return run_on_gram(k, ctx, x, a, b, m, n, steps, coeffs);
  k.to_bf16(ctx, xh_.data(), x, m * n);
  uint16_t *cur = xh_.data(), *next = xh2_.data();
  for (int it = 0; it < steps; ++it) {
    k.matmul_bf16(ctx, a, cur, cur, m, m, n, false, true, 0.0f);  // A = X X^T
    k.to_bf16(ctx, ah_.data(), a, m * m);
    k.matmul_bf16(ctx, b, ah_.data(), ah_.data(), m, m, m, false, true, 0.0f);  // A A = A A^T (A is symmetric)
    newton_schulz_poly(k, ctx, b, a, m, ns_poly(coeffs, it));                   // a I + b A + c A A
    k.to_bf16(ctx, bh_.data(), b, m * m);
    if (it + 1 < steps) {
      k.matmul_bf16_out(ctx, next, bh_.data(), cur, m, n, m, false, false);  // X' = (aI + bA + cAA) X
      std::swap(cur, next);
    } else {
      k.matmul_bf16(ctx, x, bh_.data(), cur, m, n, m, false, false, 0.0f);
    }
  }
}

bool NewtonSchulzBf16::run_one_op(const KernelTable& k, const ExecContext& ctx, float* x, bool transposed, float* a,
                                  float* b, int64_t m, int64_t n, int steps, NsCoeffs coeffs) {
  if (!k.newton_schulz_bf16 || coeffs != NsCoeffs::kQuintic || steps < 1 || m > n) return false;
  const size_t need = size_t(newton_schulz_bf16_work(m, n));
  if (work_.size() < need) work_.resize(need);
  // The normalisation is the op's scale: bf16(x / |x|) as the composed version rounds it.
  const float norm = float(std::sqrt(k.sum_squares(ctx, x, m * n)));
  return k.newton_schulz_bf16(ctx, x, transposed, 1.0f / (norm + 1e-7f), a, b, work_.data(), m, n, steps,
                              newton_schulz_bf16_on_gram(k, m, n));
}

// Long matrices: the Gram iteration of optim's newton_schulz (the steps' polynomials P commute,
// so X = (P4 ... P0) X0 with G' = P (P G)). X0, the product of the P's and the last GEMM are
// bf16; the chain that carries G from step to step (G G, P G, P (P G): m x m, fp32 sgemm) stays
// fp32, because every rounding there is amplified by the later steps (docs/BENCHMARKS.md has the
// errors against the exact iteration).
// x (m, n) is free once X0 is in bf16: it holds the fp32 R = P G and the product Q of the P's.
void NewtonSchulzBf16::run_on_gram(const KernelTable& k, const ExecContext& ctx, float* x, float* a, float* b,
                                   int64_t m, int64_t n, int steps, NsCoeffs coeffs) {
  k.to_bf16(ctx, xh_.data(), x, m * n);
  k.matmul_bf16(ctx, a, xh_.data(), xh_.data(), m, m, n, false, true, 0.0f);  // G0 = X0 X0^T
  float *r = x, *q = x + m * m;                                           // 2 m² <= m n
  for (int it = 0; it < steps; ++it) {
    newton_schulz_gram_step(k, ctx, a, b, r, m, it + 1 == steps, ns_poly(coeffs, it));
    if (it == 0) {
      std::memcpy(q, b, size_t(m * m) * sizeof(float));
    } else {  // Q = P Q: from bf16 copies, so Q can be overwritten in place
      k.to_bf16(ctx, ah_.data(), q, m * m);
      k.to_bf16(ctx, bh_.data(), b, m * m);
      symmetric_product_bf16(k, ctx, q, bh_.data(), ah_.data(), m);
    }
  }
  k.to_bf16(ctx, ah_.data(), q, m * m);
  k.matmul_bf16(ctx, x, ah_.data(), xh_.data(), m, n, m, false, false, 0.0f);  // X = Q X0
}

}  // namespace nt
