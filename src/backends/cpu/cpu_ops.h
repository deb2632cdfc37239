// SPDX-License-Identifier: MIT
// Declarations of the CPU backend's ops (same contracts as kernels/kernels.h).
#pragma once
#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "backends/cpu/mirror_upper.h"

namespace nt::cpu {

// Per-thread scratch kept across calls (OpenMP's pool threads persist), so a kernel neither
// allocates nor clears memory per call: the calling thread's buffer number `slot` (below
// kScratchSlots), grown to at least `bytes` (thread_scratch.cc).
constexpr int kScratchXent = 19;  // attention_tiled.h's slots come first
constexpr int kScratchAmxX = 20, kScratchAmxY = 21;
// relu2_then_matmul's activation (below) and matmul_bf16_out_relu2_bwd_avx512's product, where
// they compose
constexpr int kScratchRelu2 = 22;
constexpr int kScratchAmxXAll = 23;  // matmul_bf16_amx's X packed whole for all threads
constexpr int kScratchSymmetricB = 24;  // symmetric_product_f32_avx512's B in pair panels
constexpr int kScratchRowsB = 25;       // gemm_rows_bf16_avx512's B panels, for all threads
constexpr int kScratchAtA = 26, kScratchAtB = 27;  // gemm_at_f32_avx512's packed A strips and B block
constexpr int kScratchAtT = 28;                    // and C^T whole (the caller's), for C wider than tall
constexpr int kScratchSgemmB = 29;                 // sgemm_panels_avx512.cc's B panels, for all threads
constexpr int kScratchSgemmAtA = 30, kScratchSgemmAtB = 31;  // sgemm_at_avx512's packed A rows and B block
constexpr int kScratchSgemmRelu2A = 32;  // sgemm_nt_avx512's row block of relu2(A), per thread
constexpr int kScratchSlots = 33;
void* thread_scratch(int slot, size_t bytes);

// The fused-activation products (matmul_bf16_relu2, matmul_relu2) where our GEMMs do not take
// the shape: the operand relu2_a names goes through relu2 (the backend's activation pass, the
// same values) into the calling thread's kScratchRelu2 buffer, then the plain product. Internal
// linkage, as in simd_avx2.h: the callers' translation units are built for different
// instruction sets.
namespace {
template <class T>
void relu2_then_matmul(float* c, const T* a, const T* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta,
                       bool relu2_a, void (*relu2)(T*, const T*, int64_t),
                       void (*matmul)(float*, const T*, const T*, int64_t, int64_t, int64_t, bool, bool, float)) {
  const int64_t count = relu2_a ? m * k : k * n;
  T* act = static_cast<T*>(thread_scratch(kScratchRelu2, size_t(count) * sizeof(T)));
  relu2(act, relu2_a ? a : b, count);
  matmul(c, relu2_a ? act : a, relu2_a ? b : act, m, n, k, ta, tb, beta);
}
}  // namespace

void matmul(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta);
// The same product through oneDNN's cached matmul primitive (matmul_onednn.cc), C with row stride
// ldc; returns false, having done nothing, where oneDNN has only its reference implementation
// for this CPU.
// NANOTRAIN_NO_AMX (core/system.h) holds oneDNN to AVX-512-BF16 too, so that the whole program
// runs as on a CPU without AMX, and NANOTRAIN_NO_AVX512 to AVX2, as on the build floor. Called
// once, before oneDNN's first primitive (the table's build).
void limit_onednn_isa();
bool matmul_f32_brgemm(float* c, int64_t ldc, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                       bool ta, bool tb, float beta);

// The Gram product C = X X^T (a == b, B transposed, beta 0; Muon's Newton-Schulz, whose A A is
// A A^T too, A being symmetric) is symmetric: only the upper triangle is multiplied, by block
// rows (62.5 % of the FLOPs with 4 block rows), and mirrored. is_gram says whether a call
// qualifies (gains); kernels/upper_triangle.h has the block rows,
// C[i0:i0+rows, i0:m] = X[i0:i0+rows] X[i0:m]^T, and the mirror. matmul_cpu.cc says when fp32
// takes the whole product anyway.
inline bool is_gram(const void* a, const void* b, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float beta) {
  // Threaded, only long products (k >= 2m) gain: the block rows split between threads run less
  // efficiently than one GEMM, which outweighed the saved FLOPs on square X (Newton-Schulz x5 on
  // 384 x 384 and 512 x 512 measured 2-3 % faster without; on 512 x 2048, 7 % faster with). On
  // one thread (Muon's matrices side by side) the block rows run as well as the whole product:
  // fp32's triangle measured 16-28 % faster on 384 and 512 squares, 384 x 1536 and 512 x 2048;
  // bf16 Newton-Schulz 5 % faster on the squares and the same on the long ones.
  return a == b && !ta && tb && m == n && beta == 0.0f && m >= 128 && (k >= 2 * m || omp_get_max_threads() == 1);
}
void rmsnorm_fwd(float* out, float* rstd, const float* inp, int64_t rows, int64_t dim, float eps);
void rmsnorm_bwd(float* dinp, const float* dout, const float* out, const float* rstd, int64_t rows, int64_t dim, bool acc);
void rope_fwd(float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h, int64_t d);
void rope_bwd(float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h, int64_t d);
void rope_norm_fwd(float* x, float* rstd, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h,
                   int64_t d, float eps);
void rope_norm_bwd(float* dx, const float* out, const float* rstd, const float* cos, const float* sin, int64_t b,
                   int64_t t, int64_t h, int64_t d);
void attention_fwd(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b, int64_t t,
                   int64_t h, int64_t kvh, int64_t d);
void attention_bwd(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                   const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                   int64_t kvh, int64_t d);
// The tiled attention (attention_tiled.h), one pair of entry points per policy: fp32 operands on
// AVX-512 (F, BW) with gemm_pairs_f32_avx512 for its products (the pair above calls oneDNN's
// sgemm per block), and bf16 products (kernels.h attention_*_bf16) on the AVX-512-BF16 tile, on
// AMX tiles, and on the AVX2 floor's portable tile.
struct AttentionKernels {
  void (*fwd)(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b, int64_t t, int64_t h,
              int64_t kvh, int64_t d);
  void (*bwd)(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k, const float* v,
              const float* out, const float* lse, int64_t b, int64_t t, int64_t h, int64_t kvh, int64_t d);
};
extern const AttentionKernels attention_tiled_f32_avx512, attention_tiled_bf16_avx512, attention_tiled_bf16_amx,
    attention_tiled_bf16_avx2;
void relu2_fwd(float* out, const float* inp, int64_t n);
// relu2_fwd's loop over n floats on the calling thread (for ops that apply it inside their own
// threads).
void relu2_row(float* out, const float* inp, int64_t n);
void relu2_bwd(float* dinp, const float* dout, const float* inp, int64_t n);
// Both cross-entropy passes fetch each line of logits this many floats (4 KiB) ahead: the
// logits come from memory (the head's GEMM streams them past the caches), and the hardware
// prefetchers did not keep ahead of the transcendental loop (1024 x 8192 logits from memory:
// AVX-512 9.3 -> 3.8 ms, 3.9 ms from cache; AVX2 11.8 -> 6.8 ms).
constexpr int64_t kXentPrefetchFloats = 1024;
// Both cross-entropies shift the softmax's terms by cap (no max pass) while exp(z - cap), z - cap
// in [-2 cap, 0], stays above the exp's floor (-87.3); past this cap, by the row's max z. A
// target term below e^kXentTermFloor (near that floor) takes its loss from z_t itself.
constexpr float kXentShiftByCapMax = 43.5f;
constexpr double kXentTermFloor = -80.0;
void softcap_xent(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                  float grad_scale);
void softcap_xent_avx512(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                         float grad_scale);
void softcap_xent_bf16_avx2(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                            float grad_scale, uint16_t* dlogits);
void softcap_xent_bf16_avx512(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v,
                              float cap, float grad_scale, uint16_t* dlogits);
void embed_fwd(float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c);
void embed_bwd(float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c);
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2, float eps,
                float wd, float bc1, float bc2);
void axpby(float* y, const float* x, int64_t n, float a, float b);
void nesterov(float* u, float* buf, const float* g, int64_t n, float mom);
void transpose(float* dst, const float* src, int64_t rows, int64_t cols);
double sum_squares(const float* x, int64_t n);

// Mixed precision (kernels.h contracts); the _avx512 variants need avx512f/bw/bf16.
void matmul_bf16_onednn(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                        bool tb, float beta);
void matmul_bf16_widen(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                       bool tb, float beta);
void matmul_bf16_out_onednn(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                            bool ta, bool tb);
void matmul_bf16_out_widen(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                           bool ta, bool tb);
// The bf16 GEMMs of CPUs with AMX (matmul_tiles.cc): matmul_bf16_amx where it gains, oneDNN
// elsewhere.
void matmul_bf16_tiles(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                       bool tb, float beta);
void matmul_bf16_out_tiles(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                           bool ta, bool tb);
// C(m, n) = op(A) op(B) + beta C on AMX tiles, multithreaded (gemm_bf16_amx.cc): C fp32, or with
// bf16_out bf16 (beta 0), ldc elements a row; m, n, k >= 1; relu2 names an operand read through
// the MLP's activation (KernelTable::matmul_bf16_relu2). Returns false, having done nothing, for A
// and B both transposed. Needs cpu_features().amx_bf16.
// packed_b: op(B) already in the form amx_pack_b makes (b is then not read).
enum class Relu2Operand { kNone, kA, kB };
bool matmul_bf16_amx(void* c, int64_t ldc, bool bf16_out, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                     int64_t k, bool ta, bool tb, float beta, Relu2Operand relu2 = Relu2Operand::kNone,
                     const uint16_t* packed_b = nullptr);
// KernelTable::packed_b_bf16_size / pack_b_bf16 / matmul_bf16_packed_b on AMX (gemm_bf16_amx.cc,
// matmul_tiles.cc): op(B) in the B tiles' layout, chunk by chunk of the reduction, as
// matmul_bf16_amx packs it per call.
int64_t amx_packed_b_size(int64_t n, int64_t k);
void amx_pack_b(uint16_t* packed, const uint16_t* b, int64_t n, int64_t k, bool tb);
void matmul_bf16_packed_b_tiles(float* c, const uint16_t* a, const uint16_t* packed_b, int64_t m, int64_t n, int64_t k,
                                bool ta, float beta);
// KernelTable::matmul_bf16_relu2 on CPUs with AMX (matmul_tiles.cc).
void matmul_bf16_relu2_tiles(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                             bool tb, float beta, bool relu2_a);
// Our GEMM on the AVX-512-BF16 tile (gemm_rows_avx512.cc), bf16 output: C (m, n) = A op(B)
// rounded to bf16 (nearest even), A (m, k) rows, multithreaded. With act, also act =
// bf16(relu(c)^2) of the rounded c (relu2_fwd_bf16's values); with inp instead, c = bf16(2
// relu(inp) bf16(A op(B))) (relu2_bwd_bf16's values, the product rounded first; c may be inp).
// act, inp: (m, n) like c. Returns false, having done nothing, for A transposed or k odd (it
// reads A's elements in pairs), or both act and inp.
bool gemm_rows_bf16_avx512(uint16_t* c, uint16_t* act, const uint16_t* inp, const uint16_t* a, const uint16_t* b,
                           int64_t m, int64_t n, int64_t k, bool ta, bool tb);
// The same GEMM with an fp32 C: C = A op(B) (a C of 8 MiB and more written past the caches), or
// with add C += A op(B).
bool gemm_rows_f32_avx512(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                          bool tb, bool add = false);
// Our GEMM on the AVX-512-BF16 tile for A transposed (gemm_at_avx512.cc), the weight gradients:
// C (m, n) = A^T B, or with add C += A^T B; A (k, m) and B (k, n) bf16 rows; with relu2_b, B's
// values are relu2_fwd_bf16's bf16(relu(x)²) of the x stored (the MLP's activation, applied as
// B is packed). Returns false, having done nothing, where k is odd (it reads A's and B's rows in
// pairs).
bool gemm_at_f32_avx512(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool add,
                        bool relu2_b = false);
// KernelTable::packed_b_bf16_size / pack_b_bf16 / matmul_bf16_packed_b on CPUs with AVX-512-BF16
// and no AMX (gemm_rows_avx512.cc): op(B) packed once into the panels gemm_rows_f32_avx512 packs
// per call (k even; for k odd, op(B) as (k, n) rows), the product on them where that GEMM takes
// it, else oneDNN on op(B) unpacked.
int64_t rows_packed_b_size(int64_t n, int64_t k);
void rows_pack_b(uint16_t* packed, const uint16_t* b, int64_t n, int64_t k, bool tb);
void matmul_bf16_packed_b_avx512(float* c, const uint16_t* a, const uint16_t* packed, int64_t m, int64_t n, int64_t k,
                                 bool ta, float beta);
// KernelTable::matmul_bf16 on CPUs with AVX-512-BF16 and no AMX: for beta 0 and 1 (but the Gram
// products, whose upper triangle matmul_bf16_onednn multiplies) gemm_rows_f32_avx512, or
// gemm_at_f32_avx512 for A^T B, where they take the shape; else oneDNN.
void matmul_bf16_avx512(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                        bool tb, float beta);
// KernelTable::matmul_bf16_out, matmul_bf16_out_relu2 and matmul_bf16_out_relu2_bwd on CPUs with
// AVX-512-BF16 and no AMX: the GEMM above where it takes the shape, else oneDNN (and the
// activation's own pass).
void matmul_bf16_out_avx512(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                            bool ta, bool tb);
void matmul_bf16_out_relu2_avx512(uint16_t* c, uint16_t* act, const uint16_t* a, const uint16_t* b, int64_t m,
                                  int64_t n, int64_t k, bool ta, bool tb);
void matmul_bf16_out_relu2_bwd_avx512(uint16_t* dinp, const uint16_t* inp, const uint16_t* a, const uint16_t* b,
                                      int64_t m, int64_t n, int64_t k, bool ta, bool tb);
// KernelTable::matmul_bf16_relu2 there: the weight gradient A^T B with B read through the
// activation on gemm_at_f32_avx512 (the MLP's down product's, from its pre-activation); other
// patterns composed (relu2_fwd_bf16 into scratch, then matmul_bf16_avx512).
void matmul_bf16_relu2_avx512(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                              bool tb, float beta, bool relu2_a);
// KernelTable::newton_schulz_bf16 on AMX tiles (newton_schulz_amx.cc): the plain iteration only.
bool newton_schulz_bf16_amx(float* x, bool transposed, float scale, float* g, float* g2, uint16_t* work, int64_t m,
                            int64_t n, int steps, bool gram);
// The same op on the AVX-512-BF16 register tile (newton_schulz_avx512.cc): both iterations.
bool newton_schulz_bf16_avx512(float* x, bool transposed, float scale, float* g, float* g2, uint16_t* work, int64_t m,
                               int64_t n, int steps, bool gram);
// Our fp32 GEMMs on the AVX-512 pair tile, on the region's threads, C (m, n) row-major: C = A
// B^T, or with add C += A B^T, A (m, k) and B (n, k) rows; C = or += A B, A (m, k) and B (k, n)
// rows; the Gram product C = A A^T, A (m, k) rows, C (m, m) exactly symmetric
// (sgemm_panels_avx512.cc); and C = or += A^T B, A (k, m) and B (k, n) rows
// (sgemm_at_avx512.cc). All return false, having done nothing, where k is odd (they read A's
// elements in pairs).
// With relu2_a, A's values are relu2_fwd's relu(x)² of the x stored (the MLP's activation, applied
// as each row block of A is copied for the tiles).
bool sgemm_nt_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool add,
                     bool relu2_a = false);
bool sgemm_nn_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool add);
bool gram_f32_avx512(float* c, const float* a, int64_t m, int64_t k);
bool sgemm_at_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool add);
// KernelTable::matmul on CPUs with AVX-512 (F, BW) (matmul_cpu.cc): the GEMMs above where they
// gain, else matmul.
void matmul_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                   float beta);
// KernelTable::matmul_relu2 there: the MLP's down product reading relu2(fc) on sgemm_nt_avx512
// where matmul_avx512 takes that product there; other patterns composed (relu2_fwd into
// scratch, then matmul_avx512).
void matmul_relu2_avx512(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                         float beta, bool relu2_a);
// KernelTable::symmetric_product_f32 on the AVX-512 fp32 pair tile (symmetric_product_avx512.cc).
bool symmetric_product_f32_avx512(float* c, const float* a, const float* b, int64_t m);
// One row's to_bf16 on the calling thread (for ops that convert rows inside their own threads).
void to_bf16_row_avx2(uint16_t* dst, const float* src, int64_t n);
void to_bf16_row_avx512(uint16_t* dst, const float* src, int64_t n);
// rmsnorm_fwd / rmsnorm_bwd with the bf16 copy (kernels.h), converting with the row functions above.
void rmsnorm_fwd_bf16_avx2(float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows, int64_t dim,
                           float eps);
void rmsnorm_fwd_bf16_avx512(float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows, int64_t dim,
                             float eps);
void rmsnorm_bwd_bf16_avx2(float* dinp, uint16_t* dinp_h, const float* dout, const uint16_t* out_h, const float* rstd,
                           int64_t rows, int64_t dim, bool acc);
void rmsnorm_bwd_bf16_avx512(float* dinp, uint16_t* dinp_h, const float* dout, const uint16_t* out_h,
                             const float* rstd, int64_t rows, int64_t dim, bool acc);
void to_bf16_avx2(uint16_t* dst, const float* src, int64_t n);
void to_bf16_avx512(uint16_t* dst, const float* src, int64_t n);
void to_bf16_rows_avx2(uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols);
void to_bf16_rows_avx512(uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols);
void relu2_fwd_bf16_avx2(uint16_t* out, const uint16_t* inp, int64_t n);
void relu2_fwd_bf16_avx512(uint16_t* out, const uint16_t* inp, int64_t n);
void relu2_bwd_bf16_avx2(uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n);
void relu2_bwd_bf16_avx512(uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n);

// Register-tile bf16 GEMM for the small products inside attention (single-threaded: called from
// inside parallel regions): C(m, n) = A(m, 2 k2) B, or C += when accumulate. A is row-major
// bf16, lda (even) elements a row, read two at a time; B is packed in pairs along k:
// bp[kk * ldb + 2 j + e] = B(2 kk + e, j), ldb >= 2 n elements. C is fp32, ldc floats a row.
using GemmVnniBf16 = void (*)(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                              int64_t m, int64_t n, int64_t k2, bool accumulate);
void gemm_vnni_bf16_avx512(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                           int64_t m, int64_t n, int64_t k2, bool accumulate);
// The same product on AMX tiles (whole 16 x 16 x 32 tiles; the rest on the AVX-512-BF16 tile).
void gemm_vnni_bf16_amx(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                        int64_t m, int64_t n, int64_t k2, bool accumulate);
void gemm_vnni_bf16_portable(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t ldb,
                             int64_t m, int64_t n, int64_t k2, bool accumulate);
// The fp32 register tile of the fp32 attention on AVX-512: the contract of GemmVnniBf16 with
// fp32 elements, B packed in the same pairs along k: bp[kk * ldb + 2 j + e] = B(2 kk + e, j).
void gemm_pairs_f32_avx512(float* c, int64_t ldc, const float* a, int64_t lda, const float* bp, int64_t ldb,
                           int64_t m, int64_t n, int64_t k2, bool accumulate);

}  // namespace nt::cpu
