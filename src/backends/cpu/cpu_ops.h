// SPDX-License-Identifier: MIT
// Declarations of the CPU backend's ops (same contracts as kernels/kernels.h); the GEMMs are in
// gemm/gemm.h.
#pragma once
#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/mirror_upper.h"
#include "kernels/exec.h"

namespace nt::cpu {

// Scratch from the caller's workspace (kernels/exec.h), kept across calls, so a kernel neither
// allocates nor clears memory per call: the calling thread's buffer number `slot` (below
// kScratchSlots), grown to at least `bytes` (thread_scratch.cc). Thread i of the op's team takes
// the workspace's thread i; with a one-thread context the caller is thread 0, whichever thread
// of an enclosing region it is.
constexpr int kScratchXent = 19;  // attention_tiled.h's slots come first
constexpr int kScratchAmxX = 20, kScratchAmxY = 21;
// The activation of a fused-relu2 product that no GEMM takes, or such a product's own product,
// where gemm_routes.cc composes them
constexpr int kScratchRelu2 = 22;
constexpr int kScratchAmxXAll = 23;  // matmul_bf16_amx's X packed whole for all threads
constexpr int kScratchSymmetricB = 24;  // symmetric_product_f32_avx512's B in pair panels
constexpr int kScratchRowsB = 25;       // gemm_rows_bf16_avx512's B panels, for all threads
constexpr int kScratchAtA = 26, kScratchAtB = 27;  // gemm_at_f32_avx512's packed A strips and B block
constexpr int kScratchAtT = 28;                    // and C^T whole (the caller's), for C wider than tall
constexpr int kScratchSgemmB = 29;                 // sgemm_panels_avx512.cc's B panels, for all threads
constexpr int kScratchSgemmAtA = 30, kScratchSgemmAtB = 31;  // sgemm_at_avx512's packed A rows and B block
constexpr int kScratchSgemmRelu2A = 32;  // sgemm_nt_avx512's row block of relu2(A), per thread
// matmul_onednn.cc's operands widened to fp32 on the AVX2 floor, and its fp32 C before rounding
constexpr int kScratchWidenA = 33, kScratchWidenB = 34, kScratchWidenC = 35;
constexpr int kScratchSlots = 36;
static_assert(kScratchSlots <= Workspace::kSlots, "the workspace has too few slots");
void* thread_scratch(const ExecContext& ctx, int slot, size_t bytes);

void rmsnorm_fwd(const ExecContext& ctx, float* out, float* rstd, const float* inp, int64_t rows, int64_t dim,
                 float eps);
void rmsnorm_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* out, const float* rstd,
                 int64_t rows, int64_t dim, bool acc);
void rope_fwd(const ExecContext& ctx, float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h,
              int64_t d);
void rope_bwd(const ExecContext& ctx, float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h,
              int64_t d);
void rope_norm_fwd(const ExecContext& ctx, float* x, float* rstd, const float* cos, const float* sin, int64_t b,
                   int64_t t, int64_t h, int64_t d, float eps);
void rope_norm_bwd(const ExecContext& ctx, float* dx, const float* out, const float* rstd, const float* cos,
                   const float* sin, int64_t b, int64_t t, int64_t h, int64_t d);
void attention_fwd(const ExecContext& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                   int64_t b, int64_t t, int64_t h, int64_t kvh, int64_t d, int64_t window);
void attention_bwd(const ExecContext& ctx, float* dq, float* dk, float* dv, const float* dout, const float* q,
                   const float* k, const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                   int64_t kvh, int64_t d, int64_t window);
// The tiled attention (attention_tiled.h), one pair of entry points per policy: fp32 operands on
// AVX-512 (F, BW) with gemm_pairs_f32_avx512 for its products (the pair above calls oneDNN's
// sgemm per block), and bf16 products (kernels.h attention_*_bf16) on the AVX-512-BF16 tile, on
// AMX tiles, and on the AVX2 floor's portable tile.
struct AttentionKernels {
  void (*fwd)(const ExecContext& ctx, float* out, float* lse, const float* q, const float* k, const float* v, int64_t b,
              int64_t t, int64_t h, int64_t kvh, int64_t d, int64_t window);
  void (*bwd)(const ExecContext& ctx, float* dq, float* dk, float* dv, const float* dout, const float* q,
              const float* k, const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
              int64_t kvh, int64_t d, int64_t window);
};
extern const AttentionKernels attention_tiled_f32_avx512, attention_tiled_bf16_avx512, attention_tiled_bf16_amx,
    attention_tiled_bf16_avx2;
void relu2_fwd(const ExecContext& ctx, float* out, const float* inp, int64_t n);
// relu2_fwd's loop over n floats on the calling thread (for ops that apply it inside their own
// threads).
void relu2_row(float* out, const float* inp, int64_t n);
void relu2_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t n);
void gelu_fwd(const ExecContext& ctx, float* out, const float* inp, int64_t n);
void gelu_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t n);
void swiglu_fwd(const ExecContext& ctx, float* out, const float* inp, int64_t rows, int64_t f);
void swiglu_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t rows, int64_t f);
void gelu_fwd_bf16(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n);
void gelu_bwd_bf16(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n);
void swiglu_fwd_bf16(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t rows, int64_t f);
void swiglu_bwd_bf16(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t rows,
                     int64_t f);
// Both cross-entropy passes fetch each line of logits this many floats (4 KiB) ahead: the
// logits come from memory (the head's GEMM streams them past the caches), and the hardware
// prefetchers do not keep ahead of the transcendental loop.
constexpr int64_t kXentPrefetchFloats = 1024;
// Both cross-entropies shift the softmax's terms by cap (no max pass) while exp(z - cap), z - cap
// in [-2 cap, 0], stays above the exp's floor (-87.3); past this cap, by the row's max z. A
// target term below e^kXentTermFloor (near that floor) takes its loss from z_t itself.
constexpr float kXentShiftByCapMax = 43.5f;
constexpr double kXentTermFloor = -80.0;
void softcap_xent(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v,
                  float cap, float grad_scale);
void softcap_xent_avx512(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows,
                         int64_t v, float cap, float grad_scale);
void softcap_xent_bf16_avx2(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows,
                            int64_t v, float cap, float grad_scale, uint16_t* dlogits);
void softcap_xent_bf16_avx512(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets,
                              int64_t rows, int64_t v, float cap, float grad_scale, uint16_t* dlogits);
void embed_fwd(const ExecContext& ctx, float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c);
void embed_bwd(const ExecContext& ctx, float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c);
void adamw_step(const ExecContext& ctx, float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1,
                float b2, float eps, float wd, float bc1, float bc2);
void axpby(const ExecContext& ctx, float* y, const float* x, int64_t n, float a, float b);
void nesterov(const ExecContext& ctx, float* u, float* buf, const float* g, int64_t n, float mom);
void transpose(const ExecContext& ctx, float* dst, const float* src, int64_t rows, int64_t cols);
double sum_squares(const ExecContext& ctx, const float* x, int64_t n);

// KernelTable::newton_schulz_bf16 on AMX tiles (newton_schulz_amx.cc): the plain iteration only.
bool newton_schulz_bf16_amx(const ExecContext& ctx, float* x, bool transposed, float scale, float* g, float* g2,
                            uint16_t* work, int64_t m, int64_t n, int steps, bool gram);
// The same op on the AVX-512-BF16 register tile (newton_schulz_avx512.cc): both iterations.
bool newton_schulz_bf16_avx512(const ExecContext& ctx, float* x, bool transposed, float scale, float* g, float* g2,
                               uint16_t* work, int64_t m, int64_t n, int steps, bool gram);
// One row's to_bf16 on the calling thread (for ops that convert rows inside their own threads).
void to_bf16_row_avx2(uint16_t* dst, const float* src, int64_t n);
void to_bf16_row_avx512(uint16_t* dst, const float* src, int64_t n);
// rmsnorm_fwd / rmsnorm_bwd with the bf16 copy (kernels.h), converting with the row functions above.
void rmsnorm_fwd_bf16_avx2(const ExecContext& ctx, float* out, uint16_t* out_h, float* rstd, const float* inp,
                           int64_t rows, int64_t dim, float eps);
void rmsnorm_fwd_bf16_avx512(const ExecContext& ctx, float* out, uint16_t* out_h, float* rstd, const float* inp,
                             int64_t rows, int64_t dim, float eps);
void rmsnorm_bwd_bf16_avx2(const ExecContext& ctx, float* dinp, uint16_t* dinp_h, const float* dout,
                           const uint16_t* out_h, const float* rstd, int64_t rows, int64_t dim, bool acc);
void rmsnorm_bwd_bf16_avx512(const ExecContext& ctx, float* dinp, uint16_t* dinp_h, const float* dout,
                             const uint16_t* out_h, const float* rstd, int64_t rows, int64_t dim, bool acc);
void to_bf16_avx2(const ExecContext& ctx, uint16_t* dst, const float* src, int64_t n);
void to_bf16_avx512(const ExecContext& ctx, uint16_t* dst, const float* src, int64_t n);
void to_bf16_rows_avx2(const ExecContext& ctx, uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows,
                       int64_t cols);
void to_bf16_rows_avx512(const ExecContext& ctx, uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows,
                         int64_t cols);
void relu2_fwd_bf16_avx2(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n);
void relu2_fwd_bf16_avx512(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n);
void relu2_bwd_bf16_avx2(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n);
void relu2_bwd_bf16_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp,
                           int64_t n);
void gelu_fwd_bf16_avx512(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n);
void gelu_bwd_bf16_avx512(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp,
                          int64_t n);

}  // namespace nt::cpu
