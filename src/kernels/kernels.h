// SPDX-License-Identifier: MIT
// The op API: the backend seam between the model/optimizers and the compute kernels.
//
// The model and optimizers only ever call ops through a KernelTable; a backend fills one
// (backends/ref: plain loops, the executable spec; backends/cpu: threaded, vectorised, oneDNN
// GEMMs). A backend that lacks an op leaves the entry null and does not declare it in caps;
// validate() (below) names any required entry left null when a table is built.
//
// Shape letters: B batch, T time, C channels (d_model), V vocab, L layers, H query heads,
// KVH key/value heads, D head dim, F = 4C MLP hidden, N = B*T rows. All tensors are row-major,
// contiguous, float32, with the shape given in the comment.
//
// Every op takes the caller's ExecContext first (kernels/exec.h): the threads it may use, its
// scratch workspace and, on a device backend, the stream it is issued on.
//
// Gradient convention: parameter gradients ACCUMULATE (+=) so micro-batch accumulation is free;
// activation gradients OVERWRITE (=) unless the op takes an `accumulate` flag (the residual
// stream accumulates).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/exec.h"

namespace nt {

// The attention window that covers every key of any sequence: plain causal attention.
inline constexpr int64_t kFullWindow = INT64_MAX / 4;

struct KernelTable {
  const char* name;  // "ref", "cpu-avx2", "cpu-avx512", "cpu-avx512bf16", "cpu-amx"

  // What the table declares it supports: the dtypes whose ops it fills (fp32: matmul through
  // sum_squares; bf16: to_bf16 through attention_bwd_bf16), and which optional fused ops below
  // are present. validate() checks the entries against it, so that a backend lacking an op is
  // an error when its table is built, not a null call in the middle of a run.
  struct Capabilities {
    bool fp32 = false, bf16 = false;
    bool matmul_relu2 = false, matmul_bf16_relu2 = false;
    bool matmul_bf16_out_relu2 = false;  // with matmul_bf16_out_relu2_bwd
    bool matmul_bf16_out_gelu = false;   // with matmul_bf16_gelu and matmul_bf16_out_gelu_bwd
    bool newton_schulz_bf16 = false, symmetric_product_f32 = false;
    bool packed_b_bf16 = false;  // packed_b_bf16_size, pack_b_bf16 and matmul_bf16_packed_b
  };
  Capabilities caps;

  // C(M,N) = op(A) @ op(B) + beta * C, op(A) is (M,K): A is (M,K), or (K,M) when trans_a;
  // op(B) is (K,N): B is (K,N), or (N,K) when trans_b. beta = 0 overwrites, 1 accumulates.
  void (*matmul)(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                 bool trans_a, bool trans_b, float beta);

  // out = x / sqrt(mean(x^2) + eps) per row; rstd(rows) saved for backward. No weight.
  void (*rmsnorm_fwd)(const ExecContext& ctx, float* out, float* rstd, const float* inp, int64_t rows, int64_t dim,
                      float eps);
  // dinp (=, or += when accumulate) from dout, the saved normalised out and rstd.
  void (*rmsnorm_bwd)(const ExecContext& ctx, float* dinp, const float* dout, const float* out, const float* rstd,
                      int64_t rows, int64_t dim, bool accumulate);

  // Rotary embedding in place on x (B, T, heads, D), half-split layout: with x1 = x[:D/2],
  // x2 = x[D/2:], y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos. cos/sin are (T, D/2) tables for
  // the T positions of x (the sampler passes the tables offset to the position it decodes).
  void (*rope_fwd)(const ExecContext& ctx, float* x, const float* cos, const float* sin, int64_t batch, int64_t t,
                   int64_t heads, int64_t d);
  // The inverse rotation (the transpose), in place: turns dy into dx.
  void (*rope_bwd)(const ExecContext& ctx, float* dx, const float* cos, const float* sin, int64_t batch, int64_t t,
                   int64_t heads, int64_t d);
  // The QK-norm of q and k fused with their rotary embedding, in place, one pass instead of two:
  // x (B, T, heads, D) becomes rmsnorm(rope(x)) row by row (rows of D), rstd (B*T*heads) saved.
  void (*rope_norm_fwd)(const ExecContext& ctx, float* x, float* rstd, const float* cos, const float* sin,
                        int64_t batch, int64_t t, int64_t heads, int64_t d, float eps);
  // Its backward, in place: dx holds the gradient of the output and becomes the gradient of x,
  // from the saved output and rstd (rmsnorm_bwd, then rope_bwd, one pass).
  void (*rope_norm_bwd)(const ExecContext& ctx, float* dx, const float* out, const float* rstd, const float* cos,
                        const float* sin, int64_t batch, int64_t t, int64_t heads, int64_t d);

  // Causal attention with scale 1/sqrt(D) and grouped-query heads (query head h reads kv head
  // h / (H / KVH)). q (B,T,H,D), k, v (B,T,KVH,D) -> out (B,T,H,D), lse (B,H,T) saved.
  // window W >= 0: query t attends to keys max(0, t - W) .. t (sliding-window attention; the
  // kernels skip key blocks wholly outside it); W >= T - 1 (e.g. kFullWindow) is plain causal.
  void (*attention_fwd)(const ExecContext& ctx, float* out, float* lse, const float* q, const float* k, const float* v,
                        int64_t b, int64_t t, int64_t h, int64_t kvh, int64_t d, int64_t window);
  // dq, dk, dv overwritten.
  void (*attention_bwd)(const ExecContext& ctx, float* dq, float* dk, float* dv, const float* dout, const float* q,
                        const float* k, const float* v, const float* out, const float* lse, int64_t b, int64_t t,
                        int64_t h, int64_t kvh, int64_t d, int64_t window);

  // out = relu(x)^2 ; dinp = dout * 2 relu(x).
  void (*relu2_fwd)(const ExecContext& ctx, float* out, const float* inp, int64_t n);
  void (*relu2_bwd)(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t n);
  // The other MLP activations. GELU in its tanh form: out = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715
  // x^3))); dinp = dout * its derivative (dinp may be dout).
  void (*gelu_fwd)(const ExecContext& ctx, float* out, const float* inp, int64_t n);
  void (*gelu_bwd)(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t n);
  // SwiGLU over rows of inp (rows, 2f), each [gate | up]: out (rows, f) = silu(gate) * up with
  // silu(g) = g sigmoid(g); dinp (rows, 2f) = [dout * up * silu'(gate) | dout * silu(gate)].
  void (*swiglu_fwd)(const ExecContext& ctx, float* out, const float* inp, int64_t rows, int64_t f);
  void (*swiglu_bwd)(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t rows, int64_t f);

  // Soft-capped cross-entropy over rows of logits (rows, V): z = cap tanh(l / cap) (cap 0: z = l),
  // loss[r] = logsumexp(z) - z[target]; rows with target < 0 get loss 0. When grad_scale != 0,
  // logits is overwritten by dL/dlogits * grad_scale (zero for ignored rows).
  void (*softcap_xent)(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows,
                       int64_t v, float cap, float grad_scale);

  // out(N,C) = wte[ids]; dwte += scatter of dout by ids.
  void (*embed_fwd)(const ExecContext& ctx, float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c);
  void (*embed_bwd)(const ExecContext& ctx, float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c);

  // AdamW on n elements. lr already includes the schedule; bc1 = 1 - beta1^t, bc2 = 1 - beta2^t.
  void (*adamw_step)(const ExecContext& ctx, float* p, const float* g, float* m, float* v, int64_t n, float lr,
                     float beta1, float beta2, float eps, float weight_decay, float bc1, float bc2);
  // y = a * x + b * y (elementwise), used by Muon.
  void (*axpby)(const ExecContext& ctx, float* y, const float* x, int64_t n, float a, float b);
  // Muon's momentum and Nesterov update in one pass: buf = mom buf + (1 - mom) g, then
  // u = mom buf + (1 - mom) g with the new buf.
  void (*nesterov)(const ExecContext& ctx, float* u, float* buf, const float* g, int64_t n, float mom);
  // dst (cols, rows) = src (rows, cols) transposed: Muon's tall matrices into the (rows <= cols)
  // layout its Newton-Schulz takes, and back.
  void (*transpose)(const ExecContext& ctx, float* dst, const float* src, int64_t rows, int64_t cols);
  // Sum of squares, accumulated in double.
  double (*sum_squares)(const ExecContext& ctx, const float* x, int64_t n);

  // --- Mixed precision (bf16 storage as uint16_t bit patterns: the top half of an fp32) ---
  // dst = bf16(src), round to nearest even (NaN stays NaN; the AVX-512-BF16 path flushes
  // fp32 subnormals to zero, as the instruction does).
  void (*to_bf16)(const ExecContext& ctx, uint16_t* dst, const float* src, int64_t n);
  // to_bf16 of a (rows, cols) matrix into a wider one: dst row r starts at dst + r * ld_dst (the
  // q, k, v gradients side by side, as one operand of their fused weight GEMMs).
  void (*to_bf16_rows)(const ExecContext& ctx, uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows,
                       int64_t cols);
  // rmsnorm_fwd that also writes out's bf16 copy (rounded as to_bf16; out null: only the copy),
  // and rmsnorm_bwd from that copy (out_h, widened: the normalised activation a bf16 run keeps)
  // that also writes the new dinp's: a bf16 run's normalised activation and the residual's
  // gradient with their GEMM operands, in the norm's own pass instead of a conversion's pass
  // over the fp32. dinp_h may be out_h (each row is read before its copy is written).
  void (*rmsnorm_fwd_bf16)(const ExecContext& ctx, float* out, uint16_t* out_h, float* rstd, const float* inp,
                           int64_t rows, int64_t dim, float eps);
  void (*rmsnorm_bwd_bf16)(const ExecContext& ctx, float* dinp, uint16_t* dinp_h, const float* dout,
                           const uint16_t* out_h, const float* rstd, int64_t rows, int64_t dim, bool accumulate);
  // The MLP activation in bf16, where the pre-activation x and the gradient dout arrive as bf16
  // GEMM outputs (half the memory traffic of fp32 ones; the products are computed in fp32):
  // out = bf16(relu(x)^2).
  void (*relu2_fwd_bf16)(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n);
  // dinp = bf16(dout * 2 relu(x)): the activation gradient straight into its GEMM operand.
  void (*relu2_bwd_bf16)(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n);
  // gelu_fwd / gelu_bwd and swiglu_fwd / swiglu_bwd with bf16 inputs and outputs (computed in
  // fp32, each result rounded once): the other MLP activations of bf16 runs.
  void (*gelu_fwd_bf16)(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n);
  void (*gelu_bwd_bf16)(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n);
  void (*swiglu_fwd_bf16)(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t rows, int64_t f);
  void (*swiglu_bwd_bf16)(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp,
                          int64_t rows, int64_t f);
  // As matmul, with bf16 A and B, fp32 products and accumulation, fp32 C.
  void (*matmul_bf16)(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                      int64_t k, bool trans_a, bool trans_b, float beta);
  // As matmul_bf16 with beta 0, C rounded to bf16 (nearest even) as it is written: a GEMM whose
  // result is only ever another GEMM's operand (Muon's Newton-Schulz iterate) skips an fp32
  // round trip through memory.
  void (*matmul_bf16_out)(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                          int64_t n, int64_t k, bool trans_a, bool trans_b);
  // softcap_xent with grad_scale != 0 whose gradient goes to dlogits (rows, V) as bf16 (round
  // to nearest even) instead of over logits, which is scratch afterwards: the head's backward
  // GEMMs read that operand directly.
  void (*softcap_xent_bf16)(const ExecContext& ctx, float* logits, float* losses, const int32_t* targets, int64_t rows,
                            int64_t v, float cap, float grad_scale, uint16_t* dlogits);
  // Attention as attention_fwd / attention_bwd (same shapes, fp32 in and out) with its products
  // in bf16: q, k, v (and dout) are rounded to bf16 as operands; the forward rounds each
  // exp(s - row max) to bf16 where it meets V and divides O's row by their (unrounded) sum after,
  // the backward rounds P and dS where they meet dO, K and Q; scores, softmax sums, log-sum-exp
  // and every accumulation stay fp32 (the softmax's exp may be good to only 1e-4 relative: it is
  // rounded to bf16 right after). ref::attention_*_bf16 is the executable spec.
  void (*attention_fwd_bf16)(const ExecContext& ctx, float* out, float* lse, const float* q, const float* k,
                             const float* v, int64_t b, int64_t t, int64_t h, int64_t kvh, int64_t d, int64_t window);
  void (*attention_bwd_bf16)(const ExecContext& ctx, float* dq, float* dk, float* dv, const float* dout, const float* q,
                             const float* k, const float* v, const float* out, const float* lse, int64_t b, int64_t t,
                             int64_t h, int64_t kvh, int64_t d, int64_t window);

  // The bf16 GEMMs run on matrix tiles (AMX): several times the fp32 rate rather than about
  // twice, which changes which Newton-Schulz iteration is cheaper in bf16.
  bool bf16_matrix_tiles = false;

  // --- Optional fused ops: null where a backend has none, and the caller composes them from the
  // ops above (the same values; the fused op saves passes over memory). ---
  // As matmul_bf16, with one operand (A when relu2_a, else B) read through the MLP's activation:
  // its values are relu2_fwd_bf16's bf16(relu(x)²) of the bf16 x stored, never written out (the
  // MLP's down product and its weight gradient read the pre-activation itself; null: the model
  // runs relu2_fwd_bf16 into a buffer, then matmul_bf16).
  void (*matmul_bf16_relu2)(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                            int64_t n, int64_t k, bool trans_a, bool trans_b, float beta, bool relu2_a) = nullptr;
  // The same in fp32: matmul with one operand read through relu2_fwd's relu(x)², never written
  // out (the MLP's down product reads fc itself; null: the model runs relu2_fwd into a buffer,
  // then matmul).
  void (*matmul_relu2)(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n,
                       int64_t k, bool trans_a, bool trans_b, float beta, bool relu2_a) = nullptr;
  // matmul_bf16_out, and act = relu2_fwd_bf16(c) as well (the MLP's up product and its
  // activation, written from the product's registers; null: the caller runs relu2_fwd_bf16).
  void (*matmul_bf16_out_relu2)(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* a,
                                const uint16_t* b, int64_t m, int64_t n, int64_t k, bool trans_a,
                                bool trans_b) = nullptr;
  // dinp = relu2_bwd_bf16 of dout = matmul_bf16_out(a, b) and inp (the MLP's activation gradient
  // from its down product's data gradient, dout never written out; null: the caller composes
  // them). dinp may be inp.
  void (*matmul_bf16_out_relu2_bwd)(const ExecContext& ctx, uint16_t* dinp, const uint16_t* inp, const uint16_t* a,
                                    const uint16_t* b, int64_t m, int64_t n, int64_t k, bool trans_a,
                                    bool trans_b) = nullptr;
  // The same three for GELU: matmul_bf16 with one operand read through gelu_fwd_bf16; act =
  // gelu_fwd_bf16(c); and dinp = gelu_bwd_bf16 of the product and inp (null: the caller runs
  // gelu_fwd_bf16 / gelu_bwd_bf16 passes of their own).
  void (*matmul_bf16_gelu)(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m,
                           int64_t n, int64_t k, bool trans_a, bool trans_b, float beta, bool gelu_a) = nullptr;
  void (*matmul_bf16_out_gelu)(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* a,
                               const uint16_t* b, int64_t m, int64_t n, int64_t k, bool trans_a,
                               bool trans_b) = nullptr;
  void (*matmul_bf16_out_gelu_bwd)(const ExecContext& ctx, uint16_t* dinp, const uint16_t* inp, const uint16_t* a,
                                   const uint16_t* b, int64_t m, int64_t n, int64_t k, bool trans_a,
                                   bool trans_b) = nullptr;
  // Muon's bf16 Newton-Schulz iteration as one op, where a backend runs it faster than
  // NewtonSchulzBf16 composes it from the GEMMs above (null: it composes them). X0 = scale x,
  // (m, n) with m <= n, is iterated `steps` (>= 1) times with NewtonSchulzBf16's products and
  // roundings (gram: its iteration on the Gram matrix, for n >= 2 m; else the plain one), and the
  // result replaces x; with `transposed` x holds X0^T / scale as (n, m) rows, and the result's
  // transpose replaces it (Muon's tall matrices, without transposing passes). g, g2: fp32
  // scratch (m, m); work: bf16 scratch of newton_schulz_bf16_work(m, n) elements, 64-byte
  // aligned. Threaded over ctx.threads(). Returns false, having done nothing, for shapes
  // or an iteration it does not take (the CPU's: m and n whole multiples of 32; AMX: plain only).
  bool (*newton_schulz_bf16)(const ExecContext& ctx, float* x, bool transposed, float scale, float* g, float* g2,
                             uint16_t* work, int64_t m, int64_t n, int steps, bool gram) = nullptr;
  // c = a b for symmetric (m, m) fp32 a and b that commute (Newton-Schulz's Gram chain: G G,
  // P G, P (P G)), so that c is symmetric: its upper triangle multiplied, then mirrored (c exactly
  // symmetric). c must not alias a or b. Threaded over ctx.threads(), the result the same for
  // any count. Returns false, having done nothing, for sizes it does not take (the CPU's: m a
  // whole multiple of 32); null: newton_schulz_bf16.h's symmetric_product composes it.
  bool (*symmetric_product_f32)(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m) = nullptr;
  // matmul_bf16's B operand packed once for several products that read it (the output head's
  // weights, read by every row chunk's forward and data-gradient products; null: each product
  // packs its own). packed_b_bf16_size(n, k): bf16 elements of op(B)'s packed form (k x n);
  // pack_b_bf16 writes it (b as matmul_bf16 reads it, with trans_b); matmul_bf16_packed_b is
  // then matmul_bf16(c, a, b, m, n, k, trans_a, trans_b, beta), to the same rounding.
  int64_t (*packed_b_bf16_size)(const ExecContext& ctx, int64_t n, int64_t k) = nullptr;
  void (*pack_b_bf16)(const ExecContext& ctx, uint16_t* packed, const uint16_t* b, int64_t n, int64_t k,
                      bool trans_b) = nullptr;
  void (*matmul_bf16_packed_b)(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed_b, int64_t m,
                               int64_t n, int64_t k, bool trans_a, float beta) = nullptr;
};

// The quintic of Muon's Newton-Schulz iteration, X' = (a I + b A + c A A) X with A = X X^T.
inline constexpr float kNewtonSchulzA = 3.4445f, kNewtonSchulzB = -4.7750f, kNewtonSchulzC = 2.0315f;
// The bf16 scratch of KernelTable::newton_schulz_bf16: the iterate in three layouts (one twice)
// and three (m, m) operands.
inline int64_t newton_schulz_bf16_work(int64_t m, int64_t n) { return 4 * m * n + 3 * m * m; }
// Whether Newton-Schulz on an (m, n) matrix, m <= n, iterates on the Gram matrix: from n >= 2m,
// where its m x m products cost fewer FLOPs than the plain iteration's m x n ones.
inline bool newton_schulz_on_gram(int64_t m, int64_t n) { return n >= 2 * m; }

// The entries of t that its capabilities require and that are null (a required op of a
// declared dtype, or a declared optional op), by name; empty for a complete table.
std::vector<std::string> missing_ops(const KernelTable& t);
// missing_ops, and the optional entries that are present but not declared: one line each.
std::vector<std::string> table_problems(const KernelTable& t);
// Throws nt::Error naming the table and every problem table_problems finds (a backend's table
// is checked once, where it is built).
void validate(const KernelTable& t);

}  // namespace nt
