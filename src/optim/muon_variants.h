// SPDX-License-Identifier: MIT
// The passes Muon's variants add around Newton-Schulz, on one (rows, cols) matrix in the
// parameter's layout. Each is a pass or two over the matrix, O(rows cols) against the
// iteration's O(rows cols min(rows, cols)), so plain loops: threaded over rows on `threads`
// threads (the caller's context's; Muon's side-by-side lists run with one), and with per-row sums
// added in a fixed order, so the result does not depend on the thread count.
#pragma once
#include <cstdint>

namespace nt {

// MuonEq: every row scaled to the mean row norm |x|_F / sqrt(rows) (a row's norm clamped at 1e-6
// from below), so the spectrum entering the iteration is better conditioned.
void muon_row_equilibrate(float* x, int64_t rows, int64_t cols, int threads);
// x scaled to Frobenius norm `target` (its norm clamped at 1e-6 from below): Muon+ snaps the
// orthogonalised update to sqrt(min(rows, cols)), an exactly semi-orthogonal matrix's norm.
void scale_to_frobenius(float* x, int64_t n, double target, int threads);
// Floats of NorMuon's factored second moment for a (rows, cols) matrix: one per row when
// rows >= cols, else one per column.
inline int64_t normuon_state_size(int64_t rows, int64_t cols) { return rows >= cols ? rows : cols; }
// NorMuon: v (normuon_state_size floats) follows the mean square of x's rows (or columns) as an
// EMA, v += (1 - beta2) (mean - v); x's rows (columns) are divided by sqrt(max(v, 1e-10)) and the
// whole rescaled to keep its Frobenius norm.
void normuon_normalize(float* x, float* v, int64_t rows, int64_t cols, float beta2, int threads);
// p -= lr u + lr wd p mask, mask 1 where u p >= 0 when cautious, else everywhere: decoupled
// weight decay that skips the weights the update is already moving towards zero.
void muon_apply(float* p, const float* u, int64_t n, float lr, float wd, bool cautious, int threads);

}  // namespace nt
