// SPDX-License-Identifier: MIT
// The CPU backend's GEMMs: the routing entry points of the kernel table (their routes:
// gemm_routes.h), our kernels, and the oneDNN wrappers. C is row-major (m, n); A is (m, k) rows,
// or (k, m) with ta; B is (k, n) rows, or (n, k) with tb. Same contracts as kernels/kernels.h.
#pragma once
#include <omp.h>

#include <cstdint>

#include "kernels/exec.h"

namespace nt::cpu {

// The Gram product C = X X^T (a == b, B transposed, beta 0; Newton-Schulz's A A is one too, A
// being symmetric) is symmetric: the GEMMs that take it multiply only its upper triangle and
// mirror it (composed/upper_triangle.h). Threaded, only long products (k >= 2m) gain, the block
// rows running less efficiently than one GEMM; on one thread (Muon's matrices side by side) every
// size from 128 does.
inline bool is_gram(const void* a, const void* b, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float beta,
                    int threads) {
  return a == b && !ta && tb && m == n && beta == 0.0f && m >= 128 && (k >= 2 * m || threads == 1);
}

// ---- Routing entry points (gemm_entry.cc), named as the kernel table uses them. ----
// KernelTable::matmul: on the AVX2 floor (oneDNN only), and on CPUs with AVX-512 (F, BW), where
// our fp32 GEMMs take the products they gain on.
void matmul(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta,
            bool tb, float beta);
void matmul_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                   bool ta, bool tb, float beta);
// KernelTable::matmul_relu2 on AVX-512: the MLP's down product reads relu2(fc) on sgemm_nt_avx512
// where matmul_avx512 would take it there; otherwise relu2_fwd into scratch, then matmul_avx512.
void matmul_relu2_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n,
                         int64_t k, bool ta, bool tb, float beta, bool relu2_a);
// KernelTable::matmul_bf16 and matmul_bf16_out: on CPUs with AMX (_tiles), with AVX-512-BF16 and
// no AMX (_avx512), and below (_widen: the operands widened to fp32, whose products of bf16
// values are exact, then matmul).
void matmul_bf16_tiles(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb, float beta);
void matmul_bf16_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                        int64_t k, bool ta, bool tb, float beta);
void matmul_bf16_widen(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb, float beta);
void matmul_bf16_out_tiles(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                           int64_t n, int64_t k, bool ta, bool tb);
void matmul_bf16_out_avx512(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                            int64_t n, int64_t k, bool ta, bool tb);
void matmul_bf16_out_widen(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                           int64_t n, int64_t k, bool ta, bool tb);
// KernelTable::matmul_bf16_relu2 (AMX, AVX-512-BF16), matmul_bf16_out_relu2 and
// matmul_bf16_out_relu2_bwd, and their GELU twins (AVX-512-BF16 without AMX).
void matmul_bf16_relu2_tiles(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                             int64_t n, int64_t k, bool ta, bool tb, float beta, bool relu2_a);
void matmul_bf16_relu2_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                              int64_t n, int64_t k, bool ta, bool tb, float beta, bool relu2_a);
void matmul_bf16_out_relu2_avx512(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* a,
                                  const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb);
void matmul_bf16_gelu_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                             int64_t n, int64_t k, bool ta, bool tb, float beta, bool gelu_a);
void matmul_bf16_out_gelu_avx512(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* a,
                                 const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb);
void matmul_bf16_out_gelu_bwd_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* inp, const uint16_t* a,
                                     const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb);
void matmul_bf16_out_relu2_bwd_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* inp, const uint16_t* a,
                                      const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb);
// KernelTable::packed_b_bf16_size / pack_b_bf16 / matmul_bf16_packed_b: on AMX, op(B) in the B
// tiles' layout, chunk by chunk of the reduction, as matmul_bf16_amx packs it per call
// (gemm_bf16_amx.cc); on AVX-512-BF16, in the panels gemm_rows_f32_avx512 packs per call (k
// even; for k odd, op(B) as (k, n) rows), oneDNN taking what that GEMM does not
// (gemm_rows_avx512.cc).
int64_t amx_packed_b_size(const ExecContext& ctx, int64_t n, int64_t k);
void amx_pack_b(const ExecContext& ctx, uint16_t* packed, const uint16_t* b, int64_t n, int64_t k, bool tb);
void matmul_bf16_packed_b_tiles(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed_b,
                                int64_t m, int64_t n, int64_t k, bool ta, float beta);
int64_t rows_packed_b_size(const ExecContext& ctx, int64_t n, int64_t k);
void rows_pack_b(const ExecContext& ctx, uint16_t* packed, const uint16_t* b, int64_t n, int64_t k, bool tb);
void matmul_bf16_packed_b_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed, int64_t m,
                                 int64_t n, int64_t k, bool ta, float beta);
// KernelTable::symmetric_product_f32 on the AVX-512 fp32 pair tile (symmetric_product_avx512.cc).
bool symmetric_product_f32_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m);

// ---- oneDNN (matmul_onednn.cc). ----
// NANOTRAIN_NO_AMX (core/system.h) holds oneDNN to AVX-512-BF16 too, so that the whole program
// runs as on a CPU without AMX, and NANOTRAIN_NO_AVX512 to AVX2, as on the build floor. Called
// once, before oneDNN's first primitive (the table's build).
void limit_onednn_isa();
// fp32 through the cached matmul primitive, C with row stride ldc; returns false, having done
// nothing, where oneDNN has only its reference implementation for this CPU.
bool matmul_f32_brgemm(const ExecContext& ctx, float* c, int64_t ldc, const float* a, const float* b, int64_t m,
                       int64_t n, int64_t k, bool ta, bool tb, float beta);
// fp32 through sgemm; and the Gram product C = A A^T, A (m, k), as sgemm on the upper block rows,
// mirrored.
void sgemm_onednn(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                  bool ta, bool tb, float beta);
void sgemm_upper_onednn(const ExecContext& ctx, float* c, const float* a, int64_t m, int64_t k);
// bf16 operands through the cached primitives (a Gram product on its upper block rows, mirrored).
void matmul_bf16_onednn(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                        int64_t k, bool ta, bool tb, float beta);
void matmul_bf16_out_onednn(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                            int64_t n, int64_t k, bool ta, bool tb);
// The AVX2 floor's bf16 products: the operands widened to fp32, then matmul (and for a bf16 C,
// rounded by to_bf16_avx2).
void widen_then_matmul(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb, float beta);
void widen_then_matmul_bf16_out(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                                int64_t n, int64_t k, bool ta, bool tb);

// ---- Our bf16 GEMMs. ----
// C(m, n) = op(A) op(B) + beta C on AMX tiles, multithreaded (gemm_bf16_amx.cc): C fp32, or with
// bf16_out bf16 (beta 0), ldc elements a row; m, n, k >= 1; relu2 names an operand read through
// the MLP's activation. Returns false, having done nothing, for A and B both transposed. Needs
// cpu_features().amx_bf16. packed_b: op(B) already in the form amx_pack_b makes (b not read).
enum class Relu2Operand { kNone, kA, kB };
bool matmul_bf16_amx(const ExecContext& ctx, void* c, int64_t ldc, bool bf16_out, const uint16_t* a, const uint16_t* b,
                     int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta,
                     Relu2Operand relu2 = Relu2Operand::kNone, const uint16_t* packed_b = nullptr);
// On the AVX-512-BF16 tile (gemm_rows_avx512.cc), A (m, k) rows, multithreaded: C = A op(B)
// rounded to bf16 (nearest even). With act, also act = bf16(relu(c)^2) of the rounded c
// (relu2_fwd_bf16's values); with inp instead, c = bf16(2 relu(inp) bf16(A op(B))) (relu2_bwd_bf16's
// values, the product rounded first; c may be inp). With gelu, GELU's instead (gelu_fwd_bf16's and
// gelu_bwd_bf16's values). act, inp: (m, n) like c. Returns false, having done nothing, for A
// transposed or k odd (it reads A's elements in pairs), or both act and inp.
bool gemm_rows_bf16_avx512(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* inp, const uint16_t* a,
                           const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool gelu = false);
// The same GEMM with an fp32 C: C = A op(B) (a C of 8 MiB and more written past the caches), or
// with add C += A op(B); and on op(B) already in rows_pack_b's panels (k even).
bool gemm_rows_f32_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                          int64_t k, bool ta, bool tb, bool add = false);
void gemm_rows_f32_packed_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed, int64_t m,
                                 int64_t n, int64_t k, bool add);
// matmul_bf16_onednn on op(B) taken back out of rows_pack_b's form.
void matmul_bf16_onednn_rows_packed(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed,
                                    int64_t m, int64_t n, int64_t k, bool ta, float beta);
// For A transposed (gemm_at_avx512.cc), the weight gradients: C (m, n) = A^T B, or with add C +=
// A^T B; A (k, m) and B (k, n) bf16 rows; with relu2_b, B's values are relu2_fwd_bf16's
// bf16(relu(x)²) of the x stored (applied as B is packed), or with gelu too gelu_fwd_bf16's.
// Returns false, having done nothing, where k is odd (it reads A's and B's rows in pairs).
bool gemm_at_f32_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                        int64_t k, bool add, bool relu2_b = false, bool gelu = false);

// ---- Our fp32 GEMMs on the AVX-512 pair tile, on the region's threads. ----
// C = A B^T, or with add C += A B^T, A (m, k) and B (n, k) rows; C = or += A B, A (m, k) and B
// (k, n) rows; the Gram product C = A A^T, A (m, k) rows, C (m, m) exactly symmetric
// (sgemm_panels_avx512.cc); and C = or += A^T B, A (k, m) and B (k, n) rows
// (sgemm_at_avx512.cc). All return false, having done nothing, where k is odd (they read A's
// elements in pairs). With relu2_a, A's values are relu2_fwd's relu(x)² of the x stored
// (applied as each row block of A is copied for the tiles).
bool sgemm_nt_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     bool add, bool relu2_a = false);
bool sgemm_nn_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     bool add);
bool gram_f32_avx512(const ExecContext& ctx, float* c, const float* a, int64_t m, int64_t k);
bool sgemm_at_avx512(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     bool add);

// ---- Register tiles for the small products inside parallel regions (single-threaded). ----
// C(m, n) = A(m, 2 k2) B, or C += when accumulate. A is row-major bf16, lda (even) elements a
// row, read two at a time; B is packed in pairs along k: bp[kk * ldb + 2 j + e] = B(2 kk + e,
// j), ldb >= 2 n elements. C is fp32, ldc floats a row. The AVX-512-BF16 tile, AMX tiles (whole
// 16 x 16 x 32 tiles; the rest on the AVX-512-BF16 tile), and the portable floor.
using GemmVnniBf16 = void (*)(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                              int64_t m, int64_t n, int64_t k2, bool accumulate);
void gemm_vnni_bf16_avx512(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                           int64_t m, int64_t n, int64_t k2, bool accumulate);
void gemm_vnni_bf16_amx(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                        int64_t m, int64_t n, int64_t k2, bool accumulate);
void gemm_vnni_bf16_portable(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                             int64_t m, int64_t n, int64_t k2, bool accumulate);
// The fp32 pair tile: the same contract with fp32 elements, B packed in the same pairs along k.
void gemm_pairs_f32_avx512(float* c, int64_t ldc, const float* a, int64_t lda, const float* bp, int64_t ldb,
                           int64_t m, int64_t n, int64_t k2, bool accumulate);

}  // namespace nt::cpu
