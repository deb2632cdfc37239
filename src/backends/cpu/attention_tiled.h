// SPDX-License-Identifier: MIT
// The tiled attention algorithm, shared by the bf16 attention (AVX2 and AVX-512 builds) and the
// fp32 attention on AVX-512 (attention_tiled.cc, attention_tiled_avx512.cc). They supply the
// element type of the GEMM operands and the elementwise operations and GEMM tile as an Ops
// policy: Ops::Elem (uint16_t bf16 or float), Ops::Pair (two Elems: uint32_t or uint64_t),
// pack_pairs, to_operand, row_max, exp_operand, backward_pair, write_rows, write_transposed, gemm.
//
// Causal grouped-query attention, optionally in a sliding window (kernels.h); softmax and
// accumulation in fp32. A windowed query block's products start at its first row's window
// (rounded down to kWindowAlign keys), so blocks of keys wholly outside it are never computed;
// the few keys inside the products but before a row's window are zeroed in P and dS.
//
// Blocks of q_block(T) query rows, scores against the visible keys in an O(block T) per-thread
// scratch, exact softmax rows (the forward multiplies V by exp(s - max) and divides the row of O
// by the sum after: one pass over the scores fewer than normalising P first), backward
// recomputing P from the log-sum-exp, and every product a register-tile GEMM whose B operand is
// packed in pairs along k (gemm_vnni_bf16_*, gemm_pairs_f32_avx512). q, k, v, dO, P and dS
// become Elem where they become GEMM operands (in bf16 as ref::attention_*_bf16 specifies; in
// fp32 exactly). A task owns one (batch, kv head): it packs that head's K and V once into the
// pair layouts the tile reads, serves all the query heads of its group, and in backward owns the
// dK and dV rows it accumulates (kept transposed, D x T, so that dKᵀ += Qᵀ dS is a plain tile
// product; written back once at the end). The backward takes the keys in spans sized to a
// thread's L2 (key_span): each span meets every query block that sees it, and a head's dQ adds
// up over the spans in a buffer of its own. No atomics; deterministic.
#pragma once
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"
#include "core/system.h"
#include "profile/profile.h"

namespace nt::cpu::attention_tiled {

// Internal linkage (the anonymous namespace), here and in simd_avx2.h: this header is compiled
// into an AVX2 and an AVX-512 translation unit, and the linker must not pick one shared copy of
// an inline function built with AVX-512 for both.
namespace {

// Query rows a block (even: pairs of query rows never straddle two blocks). The causal blocks
// compute every score of the block's last row for all of its rows: 32-row blocks waste fewer
// products above the diagonal (at T 256, 12 % against 64-row blocks' 25 %), which pays up to
// T 1024; at T 2048 the backward is faster with 64.
constexpr int64_t kMaxQBlock = 64;
inline int64_t q_block(int64_t T) { return T <= 1024 ? 32 : kMaxQBlock; }

inline int64_t even(int64_t n) { return n + (n & 1); }

// The row stride of a scratch operand of n elements a row: n plus one 64-byte line (16 32-bit
// elements, 32 bf16). A tile reads 16 rows; with T = 2048 a row of Kᵀ pairs is 8 KiB, and rows a
// power of two of 4 KiB apart all fall into one L1 set (12 ways): every tile load missed.
inline int64_t padded(int64_t n, int64_t line_elems) { return n + line_elems; }

// The first key of a query block starting at row i0 under window W: where its first row's window
// starts, rounded down to kWindowAlign keys (even, so pair layouts stay whole; whole 64-byte
// lines of bf16 pairs).
constexpr int64_t kWindowAlign = 16;
inline int64_t window_start(int64_t i0, int64_t W) {
  return std::max<int64_t>(0, i0 - W) / kWindowAlign * kWindowAlign;
}

// The backward's keys per pass (a multiple of the query block): what one thread touches for every query
// block against a span of keys, per key (dKᵀ and dVᵀ accumulators, Kᵀ, Vᵀ and K operands, a
// block's S, dP, P and dS), fits in about 1 MiB of its 2 MiB L2. Against all of T = 2048 keys
// at once, the 64-key products read and wrote their 1 MiB dKᵀ and dVᵀ from L3 for every query
// block, and the tiles waited on those loads.
// Under a window W < T - 1, a block reads at most W + qb + kWindowAlign keys, and the next block
// most of the same ones: where that fits kWindowSpanBytes the keys stay one span, since a span's
// edge inside a block's window splits its products in two, each paying the block's fixed work.
constexpr int64_t kKeySpanBytes = int64_t(1) << 20;
constexpr int64_t kWindowSpanBytes = int64_t(2) << 20;
inline int64_t key_span(int64_t T, int64_t D, int64_t W, int64_t pair_bytes, int64_t elem_bytes) {
  const int64_t qb = q_block(T);
  const int64_t per_key =
      2 * D * 4 + (2 * even(D) / 2 + D / 2 + 1) * pair_bytes + qb * (2 * 4 + pair_bytes + elem_bytes);
  if (W < T - 1 && (W + qb + kWindowAlign) * per_key <= kWindowSpanBytes) return T;
  const int64_t span = std::max(qb, kKeySpanBytes / per_key / qb * qb);
  return span >= T ? T : span;
}

// dst (cols x rows) = src (rows x cols) transposed, 32-bit elements (bf16 pairs or floats):
// simd_avx2.h's transpose_32bit, named here beside the 64-bit one below (one name for both).
inline void transpose(uint32_t* dst, int64_t ldd, const uint32_t* src, int64_t lds, int64_t rows, int64_t cols) {
  transpose_32bit(dst, ldd, src, lds, rows, cols);
}

// The same for 64-bit elements (fp32 pairs): simd_avx2.h's transpose_64bit.
inline void transpose(uint64_t* dst, int64_t ldd, const uint64_t* src, int64_t lds, int64_t rows, int64_t cols) {
  transpose_64bit(dst, ldd, src, lds, rows, cols);
}

// The attention's per-thread scratch buffers (cpu_ops.h's thread_scratch).
enum Slot {
  kKt, kVt, kKn, kVn, kPv, kDsv, kRows, kQt, kDt, kQa, kDa, kPa, kDsa, kS, kDp, kDkt, kDvt, kOut, kDq, kSlots
};
static_assert(kSlots <= kScratchXent, "the attention's scratch slots overlap the cross-entropy's");
template <class T>
T* grab(const ExecContext& ctx, Slot slot, int64_t n) {
  return static_cast<T*>(thread_scratch(ctx, slot, size_t(n) * sizeof(T)));
}

// Whether the fetches below go to L2 (prefetcht1) rather than to L1 as well (prefetcht0). On Zen
// 4, fetching into L1 pushes the tiles' operands out of its 32 KiB, and the loads of the rows
// still wait. The other cores measured (Zen 5) keep prefetcht0: there lines fetched by
// prefetcht1 reload as slowly as from L3.
inline bool fetch_to_l2() {
  static const bool l2 = cpu_features().amd_zen4;
  return l2;
}

// rows rows of D floats, stride apart, fetched into the cache ahead of their use. The rows these
// kernels read are short (D floats) and strided (H D apart): the hardware prefetchers do not
// follow, and every row would wait on memory.
inline void prefetch_rows(const float* x, int64_t stride, int64_t rows, int64_t D) {
  const bool l2 = fetch_to_l2();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < D; e += 16) {
      const char* line = reinterpret_cast<const char*>(x + r * stride + e);
      if (l2) _mm_prefetch(line, _MM_HINT_T1);
      else _mm_prefetch(line, _MM_HINT_T0);
    }
}

// Within a loop over rows: row r of rows, fetched kAhead rows ahead of its use.
constexpr int64_t kAhead = 8;
inline void prefetch_row(const float* x, int64_t stride, int64_t r, int64_t rows, int64_t D) {
  if (r < rows) prefetch_rows(x + r * stride, stride, 1, D);
}

// Both passes fetch the rows their next task reads while this one's products run, where those
// rows take at most kPrefetchBytes (short sequences gain); at T 2048 (1 MiB of K and V a task,
// 2.5 MiB of a head's rows in the backward) they would push the task's own working set out of L2.
constexpr int64_t kPrefetchBytes = 512 << 10;

// Tasks handed out one at a time, as schedule(dynamic, 1) would. Where the passes fetch the next
// task's rows, each thread claims its next task as it starts one, so that it knows it; elsewhere
// it claims it when it gets there: with a few long tasks (T 2048: 32 of them at `frontier`), a
// task claimed ahead would wait on its thread's current one while the other thread ran out of
// work.
struct ClaimAhead {
  std::atomic<int64_t> next{0};
  int64_t take() { return next.fetch_add(1, std::memory_order_relaxed); }
};

// Q or dO block rows as a row-major A operand (d2 elements a row, zero padding).
template <class Ops>
void rows_to_operand(typename Ops::Elem* dst, int64_t d2, const float* x, int64_t stride, int64_t rows, int64_t D) {
  for (int64_t r = 0; r < rows; ++r) {
    prefetch_row(x, stride, r + kAhead, rows, D);
    Ops::to_operand(dst + r * d2, x + r * stride, D, d2);
  }
}

// Kᵀ in pairs along the head dim: kt[dd * ldk + j] = (k_j[2dd], k_j[2dd+1]): the B operand of
// S = Q Kᵀ (and, from V, of dP = dO Vᵀ). rows: scratch of T * d2 / 2 words.
template <class Ops>
void pack_transposed(typename Ops::Pair* kt, int64_t ldk, const float* k, int64_t ks, int64_t T, int64_t D,
                     typename Ops::Pair* rows) {
  const int64_t d2 = even(D);
  rows_to_operand<Ops>(reinterpret_cast<typename Ops::Elem*>(rows), d2, k, ks, T, D);
  transpose(kt, ldk, rows, d2 / 2, T, d2 / 2);
}

// K (or V) in pairs along time: kn[jj * D + d] = (k_{2jj}[d], k_{2jj+1}[d]): the B operand of
// P V and dS K.
template <class Ops>
void pack_rows(typename Ops::Pair* kn, const float* k, int64_t ks, int64_t T, int64_t D) {
  for (int64_t jj = 0; jj < even(T) / 2; ++jj) {
    prefetch_row(k, ks, 2 * jj + kAhead, T, D);
    prefetch_row(k, ks, 2 * jj + 1 + kAhead, T, D);
    Ops::pack_pairs(kn + jj * D, k + 2 * jj * ks, 2 * jj + 1 < T ? k + (2 * jj + 1) * ks : nullptr, D);
  }
}

// The same pairs from rows already converted to operand elements (n rows of D, row stride ld):
// their second read comes from the cache instead of from the fp32 tensor, rows far apart in
// memory.
template <class Ops>
void pack_rows_from_operand(typename Ops::Pair* kn, const typename Ops::Elem* rows, int64_t ld, int64_t n, int64_t D) {
  using E = typename Ops::Elem;
  for (int64_t jj = 0; jj < even(n) / 2; ++jj) {
    const E* r0 = rows + 2 * jj * ld;
    E* d = reinterpret_cast<E*>(kn + jj * D);
    if (2 * jj + 1 < n) {
      const E* r1 = r0 + ld;
      for (int64_t e = 0; e < D; ++e) d[2 * e] = r0[e], d[2 * e + 1] = r1[e];
    } else {
      for (int64_t e = 0; e < D; ++e) d[2 * e] = r0[e], d[2 * e + 1] = E(0);
    }
  }
}

// The element view of a pair buffer (the tile reads elements).
template <class Ops>
inline const typename Ops::Elem* elems(const typename Ops::Pair* v) {
  return reinterpret_cast<const typename Ops::Elem*>(v);
}

template <class Ops>
void fwd(const ExecContext& ctx, float* out, float* lse, const float* q, const float* k, const float* v, int64_t B,
         int64_t T, int64_t H, int64_t KVH, int64_t D, int64_t W) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH, qs = H * D, ks = KVH * D, d2 = even(D), t2 = even(T);
  const int64_t qb = q_block(T), nblocks = (T + qb - 1) / qb;
  using P = typename Ops::Pair;
  using E = typename Ops::Elem;
  constexpr int64_t kPairLine = 64 / sizeof(P), kElemLine = 64 / sizeof(E);
  const int64_t tp = padded(T, kPairLine);  // Kᵀ's row stride in pairs
  ClaimAhead claim;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work(Ops::kFwdZone);
    P* kt = grab<P>(ctx, kKt, d2 / 2 * tp);
    P* vn = grab<P>(ctx, kVn, t2 / 2 * D);
    P* rows_buf = grab<P>(ctx, kRows, d2 / 2 * T);
    E* qa = grab<E>(ctx, kQa, qb * d2);
    E* pa = grab<E>(ctx, kPa, qb * padded(t2, kElemLine));
    float* s = grab<float>(ctx, kS, qb * padded(T, 16));
    float* ob = grab<float>(ctx, kOut, qb * D);
    // (batch, kv head) tasks; where fetch_next, each thread claims its next one as it starts one
    // (ClaimAhead), so that while a block's products run, the rows the next block reads (Q's,
    // and a share of the next task's K and V) are fetched.
    const int64_t steps = group * nblocks;
    const bool fetch_next = 2 * T * D * int64_t(sizeof(float)) <= kPrefetchBytes;
    for (int64_t task = claim.take(), following; task < B * KVH; task = fetch_next ? following : claim.take()) {
      following = fetch_next ? claim.take() : B * KVH;
      const int64_t b = task / KVH, kvh = task % KVH;
      const bool more = following < B * KVH;
      const int64_t nb = following / KVH, nkvh = following % KVH;
      pack_transposed<Ops>(kt, tp, k + b * T * ks + kvh * D, ks, T, D, rows_buf);
      pack_rows<Ops>(vn, v + b * T * ks + kvh * D, ks, T, D);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
        for (int64_t bi = 0; bi < nblocks; ++bi) {
          const int64_t i0 = bi * qb, n = std::min(T, i0 + qb), rows = n - i0;
          const int64_t k0 = window_start(i0, W), nk = n - k0, nk2 = even(nk);  // keys [k0, n)
          const int64_t ns = padded(nk, 16), ps = padded(nk2, kElemLine);      // row strides of S and P
          if (fetch_next) {
            // The next block's Q rows: this head's next block, the next head's first, or the
            // next task's.
            if (bi + 1 < nblocks) prefetch_rows(q + (b * T + n) * qs + h * D, qs, std::min(qb, T - n), D);
            else if (h + 1 < (kvh + 1) * group) prefetch_rows(q + b * T * qs + (h + 1) * D, qs, std::min(qb, T), D);
            else if (more) prefetch_rows(q + nb * T * qs + nkvh * group * D, qs, std::min(qb, T), D);
            if (more) {  // this step's share of the next task's K and V rows
              const int64_t u = (h - kvh * group) * nblocks + bi, r0 = T * u / steps, r1 = T * (u + 1) / steps;
              prefetch_rows(k + (nb * T + r0) * ks + nkvh * D, ks, r1 - r0, D);
              prefetch_rows(v + (nb * T + r0) * ks + nkvh * D, ks, r1 - r0, D);
            }
          }
          rows_to_operand<Ops>(qa, d2, q + (b * T + i0) * qs + h * D, qs, rows, D);
          Ops::gemm(s, ns, qa, d2, elems<Ops>(kt + k0), 2 * tp, rows, nk, d2 / 2, false);  // S = Q Kᵀ
          float inv_l[kMaxQBlock];
          for (int64_t r = 0; r < rows; ++r) {
            const float* sr = s + r * ns;
            // keys max(0, i - W) .. i visible: [lo, nv) of the block's
            const int64_t lo = std::max<int64_t>(0, i0 + r - W) - k0, nv = i0 + r + 1 - k0;
            E* pr = pa + r * ps;
            const float mx = Ops::row_max(sr + lo, nv - lo) * scale;
            const float l = Ops::exp_operand(pr + lo, sr + lo, nv - lo, nk2 - lo, scale, mx);  // exp(a s - mx)
            std::fill(pr, pr + lo, E(0));
            inv_l[r] = 1.0f / l;
            lse[(b * H + h) * T + i0 + r] = mx + std::log(l);
          }
          Ops::gemm(ob, D, pa, ps, elems<Ops>(vn + k0 / 2 * D), 2 * D, rows, D, nk2 / 2, false);  // exp(S - max) V
          for (int64_t r = 0; r < rows; ++r)  // / l: P V
            for (int64_t c = 0; c < D; ++c) ob[r * D + c] *= inv_l[r];
          Ops::write_rows(out + (b * T + i0) * qs + h * D, qs, ob, rows, D);
        }
    }
  }
}

// P and dS of a pair of query rows zero for the keys before their windows: the first lo0 of row
// r0's, the first lo1 of row r0 + 1's (pairs: element 2j is row r0's key j, 2j + 1 row r0 + 1's).
template <class Ops>
void clear_before_window(typename Ops::Pair* pv, typename Ops::Pair* dsv, typename Ops::Elem* dsa0,
                         typename Ops::Elem* dsa1, int64_t lo0, int64_t lo1, bool two) {
  using E = typename Ops::Elem;
  E* p = reinterpret_cast<E*>(pv);
  E* g = reinterpret_cast<E*>(dsv);
  for (int64_t j = 0; j < lo0; ++j) p[2 * j] = g[2 * j] = dsa0[j] = E(0);
  if (two)
    for (int64_t j = 0; j < lo1; ++j) p[2 * j + 1] = g[2 * j + 1] = dsa1[j] = E(0);
}

template <class Ops>
void bwd(const ExecContext& ctx, float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
         const float* v, const float* out, const float* lse, int64_t B, int64_t T, int64_t H, int64_t KVH, int64_t D,
         int64_t W) {
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t group = H / KVH, qs = H * D, ks = KVH * D, d2 = even(D), t2 = even(T);
  const int64_t qb = q_block(T), nblocks = (T + qb - 1) / qb;
  using P = typename Ops::Pair;
  using E = typename Ops::Elem;
  constexpr int64_t kPairLine = 64 / sizeof(P), kElemLine = 64 / sizeof(E);
  const int64_t tp = padded(T, kPairLine), tf = padded(T, 16);  // Kᵀ, Vᵀ and dKᵀ, dVᵀ row strides
  const int64_t span = key_span(T, D, W, sizeof(P), sizeof(E));
  ClaimAhead claim;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work(Ops::kBwdZone);
    P* kt = grab<P>(ctx, kKt, d2 / 2 * tp);
    P* vt = grab<P>(ctx, kVt, d2 / 2 * tp);
    P* kn = grab<P>(ctx, kKn, t2 / 2 * D);
    P* rows_buf = grab<P>(ctx, kRows, std::max(d2 / 2 * T, qb / 2 * D));
    P* pv = grab<P>(ctx, kPv, qb / 2 * tp);
    P* dsv = grab<P>(ctx, kDsv, qb / 2 * tp);
    // A head's Q and dO operands and D_i, per query block, made once and read by every span.
    P* qt_all = grab<P>(ctx, kQt, nblocks * D * qb / 2);
    P* dt_all = grab<P>(ctx, kDt, nblocks * D * qb / 2);
    E* qa_all = grab<E>(ctx, kQa, nblocks * qb * d2);
    E* da_all = grab<E>(ctx, kDa, nblocks * qb * d2);
    float* di_all = grab<float>(ctx, kPa, nblocks * qb);
    E* dsa = grab<E>(ctx, kDsa, qb * padded(t2, kElemLine));
    float* s = grab<float>(ctx, kS, qb * tf);
    float* dp = grab<float>(ctx, kDp, qb * tf);
    float* ob = grab<float>(ctx, kOut, qb * D);
    float* dkt = grab<float>(ctx, kDkt, D * tf);
    float* dvt = grab<float>(ctx, kDvt, D * tf);
    // With several key spans, a head's dQ adds up here (rows of D, contiguous), then goes out.
    float* dqh = span < T ? grab<float>(ctx, kDq, T * D) : nullptr;
    // Tasks as in the forward: where fetch_next, claimed one ahead, and while a head's products
    // run, the rows the next head reads (Q's, dO's and O's, and the next task's K and V) are
    // fetched, a share a block.
    const bool fetch_next = 5 * T * D * int64_t(sizeof(float)) <= kPrefetchBytes;
    // Where the fetches go to L2 (Zen 4), each block-product's share is issued in parts, one
    // before each of its kProducts products: in one burst at the start, the prefetch
    // instructions stall there. Elsewhere (Zen 5) the burst stays.
    constexpr int kProducts = 5;  // S, dP, dQ, dKᵀ, dVᵀ: fetch_part(0) .. fetch_part(4) below
    const int fetch_parts = fetch_to_l2() ? kProducts : 1;
    // The query blocks that see the span of keys starting at j0: from j0's own block up to
    // last_block(j0) (all the rest under the causal mask alone).
    auto last_block = [&](int64_t j0) {
      const int64_t j1 = std::min(T, j0 + span);
      int64_t bi = nblocks - 1;
      while (window_start(bi * qb, W) >= j1) --bi;
      return bi;
    };
    // Under a window, a span's last block need not see all of its keys: dKᵀ and dVᵀ are cleared
    // at the start of each task and every product accumulates.
    const bool windowed = W < T - 1;
    int64_t steps = 0;  // block products a head
    for (int64_t j0 = 0; j0 < T; j0 += span) steps += last_block(j0) + 1 - j0 / qb;
    for (int64_t task = claim.take(), following; task < B * KVH; task = fetch_next ? following : claim.take()) {
      following = fetch_next ? claim.take() : B * KVH;
      const int64_t b = task / KVH, kvh = task % KVH;
      const float* kb = k + b * T * ks + kvh * D;
      const float* vb = v + b * T * ks + kvh * D;
      pack_transposed<Ops>(kt, tp, kb, ks, T, D, rows_buf);  // K's operand rows left in rows_buf
      pack_rows_from_operand<Ops>(kn, reinterpret_cast<const E*>(rows_buf), d2, T, D);
      pack_transposed<Ops>(vt, tp, vb, ks, T, D, rows_buf);
      if (windowed) {
        std::fill(dkt, dkt + D * tf, 0.0f);
        std::fill(dvt, dvt + D * tf, 0.0f);
      }
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        // Q and dO as row-major A operands (S, dP) and transposed in pairs of rows (dKᵀ, dVᵀ),
        // and D_i = dO_i . O_i, for every query block of the head.
        for (int64_t bi = 0; bi < nblocks; ++bi) {
          const int64_t i0 = bi * qb, rows = std::min(T, i0 + qb) - i0, rows2 = even(rows);
          const int64_t qo = (b * T + i0) * qs + h * D;
          rows_to_operand<Ops>(qa_all + bi * qb * d2, d2, q + qo, qs, rows, D);
          rows_to_operand<Ops>(da_all + bi * qb * d2, d2, dout + qo, qs, rows, D);
          pack_rows_from_operand<Ops>(rows_buf, qa_all + bi * qb * d2, d2, rows, D);
          transpose(qt_all + bi * D * qb / 2, rows2 / 2, rows_buf, D, rows2 / 2, D);
          pack_rows_from_operand<Ops>(rows_buf, da_all + bi * qb * d2, d2, rows, D);
          transpose(dt_all + bi * D * qb / 2, rows2 / 2, rows_buf, D, rows2 / 2, D);
          for (int64_t r = 0; r < rows; ++r) {
            prefetch_row(dout + qo, qs, r + kAhead, rows, D);
            prefetch_row(out + qo, qs, r + kAhead, rows, D);
            di_all[i0 + r] = dot(dout + qo + r * qs, out + qo + r * qs, D);
          }
        }
        // The next head: this group's next, or the next task's first (with its K and V).
        const bool last_head = h + 1 == (kvh + 1) * group, more = !last_head || following < B * KVH;
        const int64_t nb = last_head ? following / KVH : b, nh = last_head ? following % KVH * group : h + 1;
        // Keys in spans (key_span), each with every query block that sees it; within a span
        // the last block first: it sees every key of the span, so for the group's first head
        // its products overwrite the span's dKᵀ and dVᵀ (no clearing pass), and the rest
        // accumulate. dQ: the first span's product is written, later spans' add to it.
        int64_t u = 0;  // block products so far, of steps
        for (int64_t j0 = 0; j0 < T; j0 += span) {
          const int64_t j1 = std::min(T, j0 + span);
          for (int64_t bi = last_block(j0); bi >= j0 / qb; --bi, ++u) {
            // This block-product's share of the next head's rows (fetch_parts).
            auto fetch_part = [&](int part) {
              if (!fetch_next || !more || part >= fetch_parts) return;
              const int64_t a0 = T * u / steps, a1 = T * (u + 1) / steps;
              const int64_t r0 = a0 + (a1 - a0) * part / fetch_parts, r1 = a0 + (a1 - a0) * (part + 1) / fetch_parts;
              const int64_t off = (nb * T + r0) * qs + nh * D;
              prefetch_rows(q + off, qs, r1 - r0, D);
              prefetch_rows(dout + off, qs, r1 - r0, D);
              prefetch_rows(out + off, qs, r1 - r0, D);
              if (last_head) {
                const int64_t koff = (nb * T + r0) * ks + nh / group * D;
                prefetch_rows(k + koff, ks, r1 - r0, D);
                prefetch_rows(v + koff, ks, r1 - r0, D);
              }
            };
            fetch_part(0);
            const bool first = !windowed && h == kvh * group && bi == nblocks - 1;
            const int64_t i0 = bi * qb, n = std::min(T, i0 + qb), rows = n - i0, rows2 = even(rows);
            const int64_t kw = window_start(i0, W), ka = std::max(j0, kw);  // the block's keys from ka
            const int64_t qo = (b * T + i0) * qs + h * D;
            const E* qa = qa_all + bi * qb * d2;
            const E* da = da_all + bi * qb * d2;
            const float* di = di_all + i0;
            // This block's keys in the span: [ka, ka + nk). Row strides: S and dP (floats), P
            // and dS in pairs of rows, dS row-major.
            const int64_t nk = std::min(j1, n) - ka, nk2 = even(nk);
            const int64_t ns = padded(nk, 16), np = padded(nk, kPairLine), as = padded(nk2, kElemLine);
            Ops::gemm(s, ns, qa, d2, elems<Ops>(kt + ka), 2 * tp, rows, nk, d2 / 2, false);   // S = Q Kᵀ
            fetch_part(1);
            Ops::gemm(dp, ns, da, d2, elems<Ops>(vt + ka), 2 * tp, rows, nk, d2 / 2, false);  // dP = dO Vᵀ
            const float* lrow = lse + (b * H + h) * T + i0;
            for (int64_t rr = 0; rr < rows2 / 2; ++rr) {
              const int64_t r0 = 2 * rr;
              const bool two = r0 + 1 < rows;
              const float di0 = di[r0], di1 = two ? di[r0 + 1] : 0.0f;
              // Row r0 sees keys up to i0 + r0: i0 + r0 + 1 - ka of the span's.
              Ops::backward_pair(pv + rr * np, dsv + rr * np, dsa + r0 * as, dsa + (r0 + 1) * as, s + r0 * ns,
                                 s + (r0 + 1) * ns, dp + r0 * ns, dp + (r0 + 1) * ns, nk, i0 + r0 + 1 - ka,
                                 lrow[r0], two ? lrow[r0 + 1] : 0.0f, di0, di1, scale, two);
              if (nk2 > nk) dsa[r0 * as + nk] = 0, dsa[(r0 + 1) * as + nk] = 0;
              if (windowed)  // the keys before each row's window start
                clear_before_window<Ops>(pv + rr * np, dsv + rr * np, dsa + r0 * as, dsa + (r0 + 1) * as,
                                         std::min(nk, i0 + r0 - W - ka), std::min(nk, i0 + r0 + 1 - W - ka), two);
            }
            // dQ = dS K (the span's keys): one span's product goes through ob, written out with
            // streaming stores; with several, each adds into the head's dQ rows in dqh (the
            // first writes), written out after the last span. (Added into dQ itself, rows 2 KiB
            // and more apart in a tensor far past the caches, each span's product would load
            // and store them from memory.)
            fetch_part(2);
            const P* kn_span = kn + ka / 2 * D;
            if (span == T) {
              Ops::gemm(ob, D, dsa, as, elems<Ops>(kn_span), 2 * D, rows, D, nk2 / 2, false);
              Ops::write_rows(dq + qo, qs, ob, rows, D);
            } else {  // the block's first span (the one holding kw) writes
              Ops::gemm(dqh + i0 * D, D, dsa, as, elems<Ops>(kn_span), 2 * D, rows, D, nk2 / 2, ka > kw);
            }
            fetch_part(3);
            const P* qt = qt_all + bi * D * qb / 2;
            const P* dt = dt_all + bi * D * qb / 2;
            // dKᵀ += Qᵀ dS and dVᵀ += dOᵀ P over the span's columns.
            Ops::gemm(dkt + ka, tf, elems<Ops>(qt), rows2, elems<Ops>(dsv), 2 * np, D, nk, rows2 / 2, !first);
            fetch_part(4);
            Ops::gemm(dvt + ka, tf, elems<Ops>(dt), rows2, elems<Ops>(pv), 2 * np, D, nk, rows2 / 2, !first);
          }
        }
        if (dqh) Ops::write_rows(dq + (b * T) * qs + h * D, qs, dqh, T, D);
      }
      Ops::write_transposed(dk + b * T * ks + kvh * D, ks, dkt, tf, D, T);
      Ops::write_transposed(dv + b * T * ks + kvh * D, ks, dvt, tf, D, T);
    }
  }
}

}  // namespace
}  // namespace nt::cpu::attention_tiled
