// SPDX-License-Identifier: MIT
// Muon's Newton-Schulz iteration with bf16 GEMMs (fp32 accumulation, fp32 iterate), through a
// KernelTable's to_bf16 / matmul_bf16(_out) / axpby / sum_squares only. Same result as optim's
// newton_schulz (x (m, n) with m <= n is orthogonalised in place; a, b are fp32 scratch of m*m;
// no (m, n) scratch is needed); the bf16 iterates are owned here, sized on first use.
// The plain iteration's GEMMs run at the bf16 rate: ~2x the fp32 ones on AVX-512-BF16. Long
// matrices (newton_schulz_on_gram) iterate on the Gram matrix, its m x m chain in fp32.
#pragma once
#include <cstdint>

#include "core/buffer.h"
#include "kernels/kernels.h"

namespace nt {

// One iteration's polynomial, X' = (a I + b A + c A A) X with A = X X^T.
struct NsPoly {
  float a, b, c;
};
inline constexpr NsPoly kQuinticPoly{kNewtonSchulzA, kNewtonSchulzB, kNewtonSchulzC};
// Muon's polynomials: the fixed quintic every iteration, or Polar Express's five, one per
// iteration (tuned for singular values in [1e-3, 1], which end within about 15 % of 1).
enum class NsCoeffs { kQuintic, kPolarExpress };
inline constexpr int kPolarExpressSteps = 5;
NsPoly ns_poly(NsCoeffs coeffs, int iteration);
// The Frobenius normalisation before the first iteration, as a factor: 1 / (|X| + 1e-7) for the
// quintic; 1 / (1.01 |X| + 1e-6) for Polar Express, whose first polynomial is steep enough that
// a top singular value a little over 1 (fp32/bf16 rounding) would already overshoot.
float ns_norm_scale(NsCoeffs coeffs, double frobenius_norm);

// The polynomial shared by both Newton-Schulz versions (this one and optim's fp32 newton_schulz):
// given A = X X^T in a and A A in b (both (m, m), fp32), turns b into a I + b A + c A A, the
// matrix that multiplies X in one iteration, X' = (a I + b A + c A A) X.
void newton_schulz_poly(const KernelTable& k, const ExecContext& ctx, float* b, const float* a, int64_t m,
                        NsPoly p = kQuinticPoly);
// The bf16 version's choice: newton_schulz_on_gram (kernels.h), except where bf16 GEMMs run on
// matrix tiles. There the Gram iteration's fp32 chain costs more than the plain iteration's bf16
// products (measured at depth 8 on AMX: Newton-Schulz 24 % faster plain), so it iterates
// plainly, as the reference Muon implementations do in bf16.
inline bool newton_schulz_bf16_on_gram(const KernelTable& k, int64_t m, int64_t n) {
  return !k.bf16_matrix_tiles && newton_schulz_on_gram(m, n);
}
// One step of that Gram iteration, in fp32 in both versions: from G in a, this step's
// P = a I + b G + c G G into b and, unless it is the last step, G' = P (P G) into a (r: m*m
// scratch). optim's newton_schulz explains the iteration.
void newton_schulz_gram_step(const KernelTable& k, const ExecContext& ctx, float* a, float* b, float* r, int64_t m,
                             bool last, NsPoly p = kQuinticPoly);
// c = a b for symmetric (m, m) a and b that commute (polynomials in one Gram matrix: P G, P Q),
// so c is symmetric too. The fp32 one through the backend's symmetric_product_f32 where it has
// it. Else, on a one-thread context (Muon's matrices side by side) only the upper triangle is multiplied,
// by block rows, and mirrored: 64-72 % of the whole product's time on 256-512 squares, fp32 and
// bf16 (Zen 5); threaded, the whole product: block rows split between threads lose more than
// they save (cpu_ops.h's is_gram). c must not alias a or b.
void symmetric_product(const KernelTable& k, const ExecContext& ctx, float* c, const float* a, const float* b,
                       int64_t m);
// c = a a for a symmetric (m, m) fp32 a (Newton-Schulz's G G and A A): the backend's
// symmetric_product_f32 where it has it, else the table's Gram product a a^T. c must not alias a.
void symmetric_square(const KernelTable& k, const ExecContext& ctx, float* c, const float* a, int64_t m);
void symmetric_product_bf16(const KernelTable& k, const ExecContext& ctx, float* c, const uint16_t* a,
                            const uint16_t* b, int64_t m);

class NewtonSchulzBf16 {
 public:
  void run(const KernelTable& k, const ExecContext& ctx, float* x, float* a, float* b, int64_t m, int64_t n, int steps,
           NsCoeffs coeffs = NsCoeffs::kQuintic);
  // run() through the table's one op only (newton_schulz_bf16): x as (m, n) or, transposed, its
  // transpose as (n, m) rows, orthogonalised in that layout. False, with x untouched, where the
  // backend has no such op or it does not take the shape (the caller then transposes and runs).
  // The op iterates the quintic only: Polar Express always composes.
  bool run_one_op(const KernelTable& k, const ExecContext& ctx, float* x, bool transposed, float* a, float* b,
                  int64_t m, int64_t n, int steps, NsCoeffs coeffs = NsCoeffs::kQuintic);

 private:
  void run_on_gram(const KernelTable& k, const ExecContext& ctx, float* x, float* a, float* b, int64_t m, int64_t n,
                   int steps, NsCoeffs coeffs);

  Buffer<uint16_t> xh_, xh2_, ah_, bh_;  // two (m, n) iterates, two (m, m) operands
  Buffer<uint16_t> work_;                 // the table's newton_schulz_bf16 op's, where it has one
};

}  // namespace nt
