// SPDX-License-Identifier: MIT
// The bf16 GEMMs of the kernel table on CPUs with AMX: matmul_bf16_amx (gemm_bf16_amx.cc) where
// it beat oneDNN 2.x's AMX matmul on this model's shapes (the linear layers' products over a
// whole batch and their weight gradients, the head's gradients: 15-45 %, docs/PERFORMANCE.md;
// Newton-Schulz's longest products on one thread), oneDNN for the rest (tiles_gain below; most
// of Newton-Schulz's products among them) and for the transposes it does not take; and the
// product with the MLP's activation applied to an operand as it is read.
#include <omp.h>

#include "backends/cpu/cpu_ops.h"

namespace nt::cpu {

namespace {
// matmul_bf16_amx packs all of op(B) (K x N) for every call, and the product reuses each packed
// element once per row of A: with few rows (the output head's row chunks in its forward,
// Newton-Schulz's matrices) the packing cost more than oneDNN's kernels lose, measured on this
// model's shapes. Long reductions gain with fewer rows: the head's data gradient over the
// vocabulary, and the weight gradients (A^T B over a whole batch) from 512 x 512 up (512 x 512
// to 2048 x 512 over k = 8192: 5-30 % faster); below that oneDNN was as fast or up to 12 %
// faster (256 x 256 to 1024 x 256, 384 x 384, 1152 x 384), except 384 x 1536 (20-35 % slower
// on oneDNN). docs/PERFORMANCE.md has the figures.
bool tiles_gain(int64_t m, int64_t n, int64_t k, bool ta) {
  if (ta && k >= 4096) return (m < n ? m : n) >= 512 || m * n >= (int64_t(1) << 19);
  return m >= 1024 || (k >= 4096 && m >= 256 && n >= 256);
}
// A bf16 C on one thread (Newton-Schulz's X' = P X, Muon's matrices side by side) from 512 x 2048
// up: ours 12-20 % faster there (512 x 2048 x 512: 1.01 against 1.25-1.27 ms; 768 x 3072 x 768:
// 3.2-3.3 against 3.8); smaller (384 x 1536, 512 x 512) or on two threads oneDNN was as fast or
// faster.
bool tiles_gain_bf16_out(int64_t m, int64_t n, int64_t k, bool ta) {
  return tiles_gain(m, n, k, ta) || (omp_get_max_threads() == 1 && !ta && m >= 512 && n >= 2048);
}
}  // namespace

void matmul_bf16_tiles(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                       bool tb, float beta) {
  if (m == 0 || n == 0 || k == 0) return matmul_bf16_onednn(c, a, b, m, n, k, ta, tb, beta);
  if (!tiles_gain(m, n, k, ta) || is_gram(a, b, ta, tb, m, n, k, beta) ||
      !matmul_bf16_amx(c, n, false, a, b, m, n, k, ta, tb, beta))
    matmul_bf16_onednn(c, a, b, m, n, k, ta, tb, beta);
}

void matmul_bf16_out_tiles(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                           bool ta, bool tb) {
  if (m == 0 || n == 0 || k == 0) return matmul_bf16_out_onednn(c, a, b, m, n, k, ta, tb);
  if (!tiles_gain_bf16_out(m, n, k, ta) || !matmul_bf16_amx(c, n, true, a, b, m, n, k, ta, tb, 0.0f))
    matmul_bf16_out_onednn(c, a, b, m, n, k, ta, tb);
}

// The packing is paid once by pack_b for all the products that share it, so ours whatever the
// shape.
void matmul_bf16_packed_b_tiles(float* c, const uint16_t* a, const uint16_t* packed_b, int64_t m, int64_t n, int64_t k,
                                bool ta, float beta) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  matmul_bf16_amx(c, n, false, a, nullptr, m, n, k, ta, false, beta, Relu2Operand::kNone, packed_b);
}

// Where our GEMM does not take the product, the activation goes to a per-thread buffer first
// (relu2_fwd_bf16_avx512: this backend's own activation, the same values).
void matmul_bf16_relu2_tiles(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                             bool tb, float beta, bool relu2_a) {
  if (m > 0 && n > 0 && k > 0 && tiles_gain(m, n, k, ta) &&
      matmul_bf16_amx(c, n, false, a, b, m, n, k, ta, tb, beta, relu2_a ? Relu2Operand::kA : Relu2Operand::kB))
    return;
  relu2_then_matmul<uint16_t>(c, a, b, m, n, k, ta, tb, beta, relu2_a, relu2_fwd_bf16_avx512, matmul_bf16_tiles);
}

}  // namespace nt::cpu
