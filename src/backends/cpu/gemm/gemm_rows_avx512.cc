// SPDX-License-Identifier: MIT
// Our GEMM on the AVX-512-BF16 register tile for the products whose A is not transposed (contract
// in gemm.h, gemm_rows_bf16_avx512 / gemm_rows_f32_avx512), on CPUs with AVX-512-BF16 and no
// AMX: the linear layers' forward products and data gradients, the head's forward and data
// gradient (gemm_routes.cc says which). oneDNN's inner product accumulates a bf16 C in an fp32
// buffer and converts it in a second pass; here each 8 x 32 block of C is rounded from the
// tile's registers, and the MLP's activation (ReLU² or GELU), forward or backward, is applied
// there too, which saves its own pass over memory (relu2_fwd_bf16 / relu2_bwd_bf16, gelu_fwd_bf16
// / gelu_bwd_bf16). An fp32 C is streamed past
// the caches when large, or added to. The head's weights, read by every row chunk's two
// products, can be packed into its panels once a step (the kernel table's packed-B trio:
// rows_pack_b, matmul_bf16_packed_b_avx512).
//
// C = A op(B): A (m, k) bf16 rows read in place (the tile broadcasts one pair of a row's
// elements at a time); op(B) packed once a call, by all threads, into 32-column panels of k/2
// pair-rows, pair-row kk of panel p holding the pairs (B(2 kk, j), B(2 kk + 1, j)) for j =
// 32 p .. 32 p + 31 (zeros past n). Each thread takes row blocks of kBlockRows and runs every
// panel over them: the block's rows stay in L2 across the panels, each panel in L1 and L2 across
// the block's tiles. Built with -mavx512*; called only after a CPUID check.
#include <immintrin.h>
#include <omp.h>

#include <cstring>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx2.h"
#include "backends/cpu/simd_avx512.h"
#include "backends/cpu/steal_ranges.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;       // columns of a B panel and of a tile
constexpr int64_t kBlockRows = 64;   // rows of A in a unit of work (64 KiB at k 512; Units)
constexpr int64_t kStreamBytes = 8 << 20;  // an fp32 C this large is written past the caches
constexpr int64_t kGroupBytes = 256 << 10;  // a group of panels, where units run along them (Units)
constexpr int64_t kBlockPairs = 1024;       // pair-rows of a k block, where an fp32 C is summed in blocks (run)

// What a tile writes: C rounded to bf16; that and the activation relu2(C) (rounded as
// relu2_fwd_bf16 does it, from the rounded C); the activation's gradient 2 relu(x) bf16(C) from
// the pre-activation x (relu2_bwd_bf16's rounding), over C; the same two for GELU (gelu_fwd_bf16's
// and gelu_bwd_bf16's values); C in fp32 (beta 0); or C += in fp32.
enum class Epilogue { kBf16, kBf16Relu2, kRelu2Bwd, kBf16Gelu, kGeluBwd, kF32, kF32Add };


// Where a block of tiles writes: C (bf16, or fp32 for kF32 and kF32Add), act and inp as the epilogue reads
// and writes them, all with row stride ldc elements, at the block's first row and column.
// stream: an fp32 C goes past the caches (whole aligned lines only).
struct Out {
  void* c;
  uint16_t* act;
  const uint16_t* inp;
  int64_t ldc;
  bool stream;
  Out at(int64_t i, int64_t j, bool f32) const {
    const int64_t off = i * ldc + j;
    void* const p = f32 ? static_cast<void*>(static_cast<float*>(c) + off)
                        : static_cast<void*>(static_cast<uint16_t*>(c) + off);
    return {p, act ? act + off : nullptr, inp ? inp + off : nullptr, ldc, stream};
  }
};

__m512 widen_lo(__m512i v) { return widen_bf16x16(_mm512_castsi512_si256(v)); }
__m512 widen_hi(__m512i v) { return widen_bf16x16(_mm512_extracti64x4_epi64(v, 1)); }
__m512i round_pair(__m512 lo, __m512 hi) { return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)); }

// Row r of a tile's output, 32 columns under mask m: the accumulators lo (columns 0-15) and hi
// (16-31) through the epilogue.
template <Epilogue E>
inline void emit_row(const Out& o, int64_t r, __m512 lo, __m512 hi, __mmask32 m) {
  const int64_t off = r * o.ldc;
  if constexpr (E == Epilogue::kF32Add) {  // C += (beta 1)
    float* c = static_cast<float*>(o.c) + off;
    store_masked_ps(c, __mmask16(m), _mm512_add_ps(lo, load_masked_ps(__mmask16(m), c)));
    const __mmask16 m1 = __mmask16(m >> 16);
    store_masked_ps(c + 16, m1, _mm512_add_ps(hi, load_masked_ps(m1, c + 16)));
    return;
  }
  if constexpr (E == Epilogue::kF32) {
    float* c = static_cast<float*>(o.c) + off;
    if (o.stream && m == __mmask32(0xffffffffu)) {
      _mm512_stream_ps(c, lo);
      _mm512_stream_ps(c + 16, hi);
    } else {
      store_masked_ps(c, __mmask16(m), lo);
      store_masked_ps(c + 16, __mmask16(m >> 16), hi);
    }
    return;
  }
  uint16_t* c = static_cast<uint16_t*>(o.c) + off;
  const __m512i v = round_pair(lo, hi);
  const __m512 zero = _mm512_setzero_ps();
  if constexpr (E == Epilogue::kRelu2Bwd) {
    const __m512i x = load_masked_epi16(m, o.inp + off);
    const __m512 two = _mm512_set1_ps(2.0f);
    const __m512 rlo = _mm512_max_ps(widen_lo(x), zero), rhi = _mm512_max_ps(widen_hi(x), zero);
    const __m512i d = round_pair(_mm512_mul_ps(_mm512_mul_ps(two, rlo), widen_lo(v)),
                                 _mm512_mul_ps(_mm512_mul_ps(two, rhi), widen_hi(v)));
    store_masked_epi16(c, m, d);
    return;
  }
  if constexpr (E == Epilogue::kGeluBwd) {
    const __m512i x = load_masked_epi16(m, o.inp + off);
    store_masked_epi16(c, m, round_pair(_mm512_mul_ps(widen_lo(v), gelu_grad16(widen_lo(x))),
                                        _mm512_mul_ps(widen_hi(v), gelu_grad16(widen_hi(x)))));
    return;
  }
  store_masked_epi16(c, m, v);
  if constexpr (E == Epilogue::kBf16Gelu)
    store_masked_epi16(o.act + off, m, round_pair(gelu16(widen_lo(v)), gelu16(widen_hi(v))));
  if constexpr (E == Epilogue::kBf16Relu2) {
    const __m512 rlo = _mm512_max_ps(widen_lo(v), zero), rhi = _mm512_max_ps(widen_hi(v), zero);
    store_masked_epi16(o.act + off, m, round_pair(_mm512_mul_ps(rlo, rlo), _mm512_mul_ps(rhi, rhi)));
  }
}

// MR (<= 8) rows x 32 columns of C over k2 pair-rows of the panel bp (bf16_tile_product, the
// attention's tile), then the epilogue.
template <int MR, Epilogue E>
void tile(const Out& o, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t k2, __mmask32 m) {
  __m512 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) c0[r] = c1[r] = _mm512_setzero_ps();
  bf16_tile_product<MR>(c0, c1, a, lda, bp, 2 * kPanel, k2, __mmask16(0xffff), __mmask16(0xffff));
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) emit_row<E>(o, r, c0[r], c1[r], m);
}

// The tiles of `rows` rows from o's first row, one 32-column panel.
template <Epilogue E>
void tiles(const Out& o, const uint16_t* a, int64_t lda, const uint16_t* bp, int64_t k2, int64_t rows, __mmask32 m) {
  constexpr bool f32 = E == Epilogue::kF32 || E == Epilogue::kF32Add;
  int64_t i = 0;
  for (; i + 8 <= rows; i += 8) tile<8, E>(o.at(i, 0, f32), a + i * lda, lda, bp, k2, m);
  const Out ot = o.at(i, 0, f32);
  const uint16_t* ar = a + i * lda;
  switch (rows - i) {
    case 7: tile<7, E>(ot, ar, lda, bp, k2, m); break;
    case 6: tile<6, E>(ot, ar, lda, bp, k2, m); break;
    case 5: tile<5, E>(ot, ar, lda, bp, k2, m); break;
    case 4: tile<4, E>(ot, ar, lda, bp, k2, m); break;
    case 3: tile<3, E>(ot, ar, lda, bp, k2, m); break;
    case 2: tile<2, E>(ot, ar, lda, bp, k2, m); break;
    case 1: tile<1, E>(ot, ar, lda, bp, k2, m); break;
    default: break;
  }
}

// Panel p of op(B) (k x n; B is (n, k) rows with tb, else (k, n) rows) into dst: k/2 pair-rows of
// 32 pairs.
void pack_panel(uint16_t* dst, const uint16_t* b, int64_t n, int64_t k, bool tb, int64_t p) {
  const int64_t j0 = kPanel * p, cols = n - j0 < kPanel ? n - j0 : kPanel, k2 = k / 2;
  if (tb) {  // pairs are 32-bit words of B's rows: transpose a (cols x k/2) block of words
    if (cols < kPanel) std::memset(dst, 0, size_t(k2 * 2 * kPanel) * sizeof(uint16_t));
    transpose_32bit(reinterpret_cast<uint32_t*>(dst), kPanel, reinterpret_cast<const uint32_t*>(b + j0 * k), k2, cols,
                    k2);
    return;
  }
  const __mmask32 m = lanes32(cols);
  for (int64_t kk = 0; kk < k2; ++kk) {
    const __m512i r0 = load_masked_epi16(m, b + 2 * kk * n + j0);
    const __m512i r1 = load_masked_epi16(m, b + (2 * kk + 1) * n + j0);
    _mm512_store_si512(dst + kk * 2 * kPanel, interleave_bf16_rows(r0, r1, 0));
    _mm512_store_si512(dst + kk * 2 * kPanel + kPanel, interleave_bf16_rows(r0, r1, 1));
  }
}

// op(B) in panels (pack_panel's), all of them: panels (n / 32, rounded up) x k / 2 pair-rows of 32
// pairs, panel p at p k 32.
int64_t panels_size(int64_t n, int64_t k) { return (n + kPanel - 1) / kPanel * k * kPanel; }

// How a call's tiles are shared out: units of a row block (kBlockRows rows of A) against a part
// of the panels. Where A has more rows than op(B) has columns, a thread's units run along A's row
// blocks, each against every panel (or, where row blocks are too few for the threads, against a
// part of them): a block's rows stay in L2 across the panels. Where op(B) is the larger (the
// head's forward, m = 1024 rows of a chunk against V columns), the units run along groups of
// panels of about kGroupBytes, each against every row block: the group stays in L2 and A, the
// smaller operand, is read again from L3, where B's panels read again for every row block (32
// MiB of them at `frontier`) would come from memory.
struct Units {
  int64_t panels, blocks, parts, count;
  bool by_part;  // units ordered part by part (each part against every row block)
  Units(int64_t threads, int64_t m, int64_t n, int64_t k) : panels((n + kPanel - 1) / kPanel) {
    const int64_t panel_bytes = k * kPanel * int64_t(sizeof(uint16_t));
    blocks = (m + kBlockRows - 1) / kBlockRows;
    by_part = n > m;
    parts = (2 * threads + blocks - 1) / blocks;  // at least two units a thread
    if (by_part) {
      const int64_t group = kGroupBytes / panel_bytes > 1 ? kGroupBytes / panel_bytes : 1;
      if ((panels + group - 1) / group > parts) parts = (panels + group - 1) / group;
    }
    if (parts > panels) parts = panels;
    count = blocks * parts;
  }
  int64_t block(int64_t u) const { return by_part ? u % blocks : u / parts; }
  int64_t part(int64_t u) const { return by_part ? u / blocks : u % parts; }
};

// One unit of sweep: its row block of A against its part of the panels.
template <Epilogue E>
void sweep_unit(const Out& out, const uint16_t* a, const uint16_t* packed, int64_t m, int64_t n, int64_t k,
                const Units& units, int64_t kk0, int64_t kb2, int64_t u) {
  const int64_t panels = units.panels, panel_elems = k * kPanel;
  const int64_t i0 = units.block(u) * kBlockRows, part = units.part(u);
  const int64_t rows = m - i0 < kBlockRows ? m - i0 : kBlockRows;
  const int64_t p0 = panels * part / units.parts, p1 = panels * (part + 1) / units.parts;
  for (int64_t p = p0; p < p1; ++p) {
    // inp's line in each row of panel p + 4, fetched into L2 while this panel's tiles run:
    // inp comes from memory, its rows n elements apart (4 KiB at depth 8: they share one L1
    // set, so L2). Without it the relu2 bwd epilogue waits on every line.
    if (out.inp && p + 4 < p1)
      for (int64_t r = 0; r < rows; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(out.inp + (i0 + r) * n + kPanel * (p + 4)), _MM_HINT_T1);
    if (E == Epilogue::kF32Add && p + 4 < p1)  // the same for C's two lines a row
      for (int64_t r = 0; r < rows; ++r) {
        const float* cl = static_cast<const float*>(out.c) + (i0 + r) * n + kPanel * (p + 4);
        _mm_prefetch(reinterpret_cast<const char*>(cl), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(cl + 16), _MM_HINT_T1);
      }
    constexpr bool f32 = E == Epilogue::kF32 || E == Epilogue::kF32Add;
    tiles<E>(out.at(i0, kPanel * p, f32), a + i0 * k + 2 * kk0, k, packed + p * panel_elems + kk0 * 2 * kPanel, kb2,
             rows, lanes32(n - kPanel * p));
  }
}

// Inside the parallel region, this thread's units over pair-rows kk0 .. kk0 + kb2 of the panels
// (and the matching columns of A), the epilogue E writing their sum. Where the units are the
// whole sum they are shared out by work stealing (`whole`, steal_ranges.h): a unit's result is
// the same whichever thread runs it, and on a shared machine one core can run slower than the
// other for a while (the other would wait at the end of every product). Units handed out one at
// a time in order (schedule(dynamic, 1)) would alternate between the threads, losing locality.
// Where k is summed in blocks each thread keeps the same units in every block (static), so that
// no barrier is needed between blocks.
template <Epilogue E>
void sweep(const Out& out, const uint16_t* a, const uint16_t* packed, int64_t m, int64_t n, int64_t k,
           const Units& units, int64_t kk0, int64_t kb2, StealRanges* whole) {
  if (whole) {
    const int t = omp_get_thread_num();
    for (int64_t u; (u = whole->next(t)) >= 0;) sweep_unit<E>(out, a, packed, m, n, k, units, kk0, kb2, u);
  } else {
#pragma omp for schedule(static) nowait
    for (int64_t u = 0; u < units.count; ++u) sweep_unit<E>(out, a, packed, m, n, k, units, kk0, kb2, u);
  }
}

// The GEMM with op(B) packed into panels here, or, with prepacked, already (its B not read).
// An fp32 C with a long reduction (the head's data gradient, k = V) is summed over blocks of
// kBlockPairs pair-rows, each block's tiles adding to C: a tile over all of k = 32768 would read
// its 2 MiB panel from L3 or memory. A thread's units are the same in every block (one static
// schedule over the same count), so no barrier is needed between blocks.
template <Epilogue E>
void run(const ExecContext& ctx, const Out& out, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
         bool tb, const uint16_t* prepacked = nullptr) {
  const int64_t panels = (n + kPanel - 1) / kPanel, k2 = k / 2, panel_elems = k2 * 2 * kPanel;
  uint16_t* const scratch =
      prepacked
          ? nullptr
          : static_cast<uint16_t*>(thread_scratch(ctx, kScratchRowsB, size_t(panels_size(n, k)) * sizeof(uint16_t)));
  const uint16_t* const packed = prepacked ? prepacked : scratch;
  const Units units(ctx.threads(), m, n, k);
  constexpr bool f32 = E == Epilogue::kF32 || E == Epilogue::kF32Add;
  const bool blocked = f32 && k2 > 2 * kBlockPairs;
  StealRanges ranges(units.count, ctx.threads());
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("gemm rows");
    if (!prepacked) {
#pragma omp for schedule(static)
      for (int64_t p = 0; p < panels; ++p) pack_panel(scratch + p * panel_elems, b, n, k, tb, p);
    }
    if (!blocked) {
      sweep<E>(out, a, packed, m, n, k, units, 0, k2, &ranges);
    } else {  // (C read back by the next block: not streamed)
      const Out o{out.c, nullptr, nullptr, out.ldc, false};
      for (int64_t kk0 = 0; kk0 < k2; kk0 += kBlockPairs) {
        const int64_t kb2 = k2 - kk0 < kBlockPairs ? k2 - kk0 : kBlockPairs;
        if (kk0 == 0 && E == Epilogue::kF32) sweep<Epilogue::kF32>(o, a, packed, m, n, k, units, kk0, kb2, nullptr);
        else sweep<Epilogue::kF32Add>(o, a, packed, m, n, k, units, kk0, kb2, nullptr);
      }
    }
    if (out.stream && !blocked) _mm_sfence();  // the streaming stores are seen before the region's barrier
  }
}

}  // namespace

bool gemm_rows_bf16_avx512(const ExecContext& ctx, uint16_t* c, uint16_t* act, const uint16_t* inp, const uint16_t* a,
                           const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool gelu) {
  if (ta || m < 1 || n < 1 || k < 2 || k % 2 != 0 || (act && inp)) return false;
  const Out out{c, act, inp, n, false};
  if (inp && gelu) run<Epilogue::kGeluBwd>(ctx, out, a, b, m, n, k, tb);
  else if (inp) run<Epilogue::kRelu2Bwd>(ctx, out, a, b, m, n, k, tb);
  else if (act && gelu) run<Epilogue::kBf16Gelu>(ctx, out, a, b, m, n, k, tb);
  else if (act) run<Epilogue::kBf16Relu2>(ctx, out, a, b, m, n, k, tb);
  else run<Epilogue::kBf16>(ctx, out, a, b, m, n, k, tb);
  return true;
}

namespace {

// The fp32-C GEMM, op(B) packed here or prepacked.
void rows_f32(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, const uint16_t* prepacked,
              int64_t m, int64_t n, int64_t k, bool tb, bool add) {
  if (add) {
    run<Epilogue::kF32Add>(ctx, Out{c, nullptr, nullptr, n, false}, a, b, m, n, k, tb, prepacked);
    return;
  }
  // C from kStreamBytes up, in whole lines, goes past the caches (write-allocating it cost more).
  const bool stream = m * n * int64_t(sizeof(float)) >= kStreamBytes && n % 16 == 0 &&
                      (reinterpret_cast<uintptr_t>(c) & 63) == 0;
  run<Epilogue::kF32>(ctx, Out{c, nullptr, nullptr, n, stream}, a, b, m, n, k, tb, prepacked);
}

}  // namespace

bool gemm_rows_f32_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                          int64_t k, bool ta, bool tb, bool add) {
  if (ta || m < 1 || n < 1 || k < 2 || k % 2 != 0) return false;
  rows_f32(ctx, c, a, b, nullptr, m, n, k, tb, add);
  return true;
}

// The packed form: op(B)'s panels where k is even (what our GEMM reads), else op(B) itself as
// (k, n) rows (what oneDNN reads then).
int64_t rows_packed_b_size(const ExecContext& ctx, int64_t n, int64_t k) {
  return k % 2 == 0 ? panels_size(n, k) : n * k;
}

void rows_pack_b(const ExecContext& ctx, uint16_t* packed, const uint16_t* b, int64_t n, int64_t k, bool tb) {
  if (k % 2 != 0) {
    if (!tb) {
      std::memcpy(packed, b, size_t(k * n) * sizeof(uint16_t));
      return;
    }
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j) packed[kk * n + j] = b[j * k + kk];
    return;
  }
  const int64_t panels = (n + kPanel - 1) / kPanel, panel_elems = k * kPanel;
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
  for (int64_t p = 0; p < panels; ++p) pack_panel(packed + p * panel_elems, b, n, k, tb, p);
}

void gemm_rows_f32_packed_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed, int64_t m,
                                 int64_t n, int64_t k, bool add) {
  rows_f32(ctx, c, a, nullptr, packed, m, n, k, false, add);
}

void matmul_bf16_onednn_rows_packed(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* packed,
                                    int64_t m, int64_t n, int64_t k, bool ta, float beta) {
  const uint16_t* plain = packed;  // op(B) as (k, n) rows, for oneDNN
  if (k % 2 == 0) {                // out of its panels: pair-row kk of panel p, pair jj, holds
                                   // B(2 kk, 32 p + jj) and B(2 kk + 1, 32 p + jj)
    uint16_t* const u = static_cast<uint16_t*>(thread_scratch(ctx, kScratchRowsB, size_t(k * n) * sizeof(uint16_t)));
    for (int64_t kk = 0; kk < k / 2; ++kk)
      for (int64_t j = 0; j < n; ++j) {
        const uint16_t* pair = packed + (j / kPanel) * k * kPanel + kk * 2 * kPanel + 2 * (j % kPanel);
        u[2 * kk * n + j] = pair[0];
        u[(2 * kk + 1) * n + j] = pair[1];
      }
    plain = u;
  }
  matmul_bf16_onednn(ctx, c, a, plain, m, n, k, ta, false, beta);
}

}  // namespace nt::cpu
