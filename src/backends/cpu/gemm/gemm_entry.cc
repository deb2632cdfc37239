// SPDX-License-Identifier: MIT
// fp32 GEMM through oneDNN's sgemm (row-major), which reaches 80-96 % of this machine's fp32
// peak on most of the model's shapes (PERF.md); it runs on the same GNU OpenMP pool as our
// kernels. The exception is the forward product C = A B^T with a reduction longer than its rows
// (k > n: the MLP's down projection): sgemm ran it at 290-330 GFLOP/s, oneDNN's matmul primitive
// (brgemm) at 380-410, measured on this model's shapes. On the other patterns sgemm was as fast
// or faster. The same holds for the long Gram products of Newton-Schulz (X X^T, k >= 2m): the
// matmul primitive on the whole product beat sgemm on its block upper triangle (cpu_ops.h) by
// 14-50 % (384 x 1536, 512 x 2048, 256 x 1024) with two threads; on one thread (Muon's matrices
// side by side) the triangle was 16-28 % faster than either whole product. And the output head's
// weight gradient, dW (V, C) += dlogits^T lnf (A transposed, far more rows than columns): the
// primitive ran it 11-13 % faster than sgemm (8192 x 384 and 8192 x 512, k 512). On the blocks'
// weight gradients neither won everywhere on Zen 5, but on an Intel Xeon (AVX-512) sgemm fell to
// 185-200 GFLOP/s where A has 3-4x B's columns (MLP up, qkv) and the primitive ran 240-265: so
// the primitive from m >= 2 n (a whole depth-8 fp32 step 5 % faster there).
//
// On CPUs with AVX-512, matmul_avx512 takes these products to our own GEMMs on the fp32 pair
// tile (timed call by call inside fp32 steps on Zen 5, 2 threads, medians of 32-96 calls against
// the same step on oneDNN):
// - the linear layers' forward products C = A B^T whose reduction is at least as long as B's
//   rows (q k v, the attention's output, c_proj: k >= n) and whose A is tall (m >= 2 n):
//   sgemm_nt_avx512. Depth 8: 8192 x 512 x 512 10.6 against 13.7 ms, with C += 11.2 against
//   14.1, 8192 x 512 x 2048 43.5 against 45.6;
// - the data gradients C = A B with A far taller than B is wide (m >= 8 n), k >= n and n >= 512
//   (depth 8's q k v, attention output and c_fc data gradients): sgemm_nn_avx512. Depth 8, six
//   rounds: 8192 x 512 x 2048 44.1 against 47.3 ms, 8192 x 512 x 512 10.6 against 11.5;
// - the weight gradients C = A^T B with C tall (m >= 2 n: c_fc's) and wide enough to pay for
//   packing A (n >= 512): sgemm_at_avx512. c_fc's backward 7 % faster at depth 8 (its weight
//   gradient 2048 x 512 x 8192);
// - on one thread (Muon's Newton-Schulz, a matrix a thread), the Gram product X X^T as its upper
//   triangle (gram_f32_avx512, in place of sgemm on block rows), and the m x m polynomial times X
//   (sgemm_nn_avx512 where m = k and n >= m): Newton-Schulz's share of a depth-8 fp32 step 5-8 %
//   smaller, of depth 6 and `cpu` 5 % and 8 %.
// They lost elsewhere, so those stay with oneDNN: where n > k in the forward (c_fc's, 8192 x 2048
// x 512: 42.0 against 40.1; the head's, whose A is short); on the data gradients where n < 512
// (8192 x 384 x 384 5 % slower at depth 6), or A is short (the head's 1024 x 512 x 8192, 9 %
// slower: packing B weighs more against fewer rows); and on the weight gradients with n < 512
// (the head's at d 256 and d 384, 4-5 % slower).
#include <dnnl.h>

#include "backends/cpu/cpu_ops.h"
#include "core/check.h"

namespace nt::cpu {

namespace {
void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  NT_CHECK(st == dnnl_success, "dnnl_sgemm failed with status %d (m=%ld n=%ld k=%ld)", int(st), long(m), long(n),
           long(k));
}
}  // namespace

void matmul(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
            float beta) {
  if (m == 0 || n == 0) return;
  if (is_gram(a, b, ta, tb, m, n, k, beta)) {
    // Threaded, the whole product through the matmul primitive (faster, see above); on one
    // thread, or where oneDNN has no jit for it, sgemm on the block upper triangle.
    if (omp_get_max_threads() == 1 || !matmul_f32_brgemm(c, n, a, b, m, n, k, ta, tb, beta))
      for_each_upper_block_row(m, [&](int64_t i0, int64_t rows) {
        sgemm('N', 'T', rows, m - i0, k, a + i0 * k, k, a + i0 * k, k, 0.0f, c + i0 * m + i0, m);
      });
    mirror_upper_triangle(c, m);  // exactly symmetric either way
    return;
  }
  if (!ta && tb && k > n && matmul_f32_brgemm(c, n, a, b, m, n, k, ta, tb, beta)) return;
  if (ta && !tb && m >= 2 * n && matmul_f32_brgemm(c, n, a, b, m, n, k, ta, tb, beta)) return;
  const dnnl_dim_t lda = ta ? m : k, ldb = tb ? k : n;
  sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, a, lda, b, ldb, beta, c, n);
}

namespace {
// Where matmul_avx512 takes C = A B^T (beta 0 or 1) to sgemm_nt_avx512.
bool ours_nt(int64_t m, int64_t n, int64_t k) { return k >= n && m >= 2 * n; }
}  // namespace

void matmul_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                   float beta) {
  const bool set_or_add = beta == 0.0f || beta == 1.0f, add = beta == 1.0f;
  // Muon's Newton-Schulz, one thread a matrix: X X^T and the (m, m) polynomial times X.
  if (omp_get_max_threads() == 1) {
    if (is_gram(a, b, ta, tb, m, n, k, beta) && gram_f32_avx512(c, a, m, k)) return;
    if (!ta && !tb && m == k && n >= m && set_or_add && sgemm_nn_avx512(c, a, b, m, n, k, add)) return;
  }
  if (!ta && tb && ours_nt(m, n, k) && set_or_add && sgemm_nt_avx512(c, a, b, m, n, k, add)) return;
  if (!ta && !tb && k >= n && m >= 8 * n && n >= 512 && set_or_add && sgemm_nn_avx512(c, a, b, m, n, k, add)) return;
  if (ta && !tb && m >= 2 * n && n >= 512 && set_or_add && sgemm_at_avx512(c, a, b, m, n, k, add)) return;
  matmul(c, a, b, m, n, k, ta, tb, beta);
}

// The MLP's down product in fp32, x += relu2(fc) Wproj^T, is one sgemm_nt_avx512 takes: it reads
// relu2(fc) as it copies fc's row blocks, instead of relu2_fwd's pass writing it out first (at
// depth 8, 67 MB written and read again a layer).
void matmul_relu2_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                         float beta, bool relu2_a) {
  if (relu2_a && !ta && tb && (beta == 0.0f || beta == 1.0f) && ours_nt(m, n, k) &&
      sgemm_nt_avx512(c, a, b, m, n, k, beta == 1.0f, true))
    return;
  relu2_then_matmul<float>(c, a, b, m, n, k, ta, tb, beta, relu2_a, relu2_fwd, matmul_avx512);
}

}  // namespace nt::cpu
