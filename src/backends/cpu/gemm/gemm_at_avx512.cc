// SPDX-License-Identifier: MIT
// Our GEMM on the AVX-512-BF16 register tile for A transposed, C (m, n) = A^T B or C += A^T B with
// A (k, m) and B (k, n) bf16 rows and k long (contract in gemm.h, gemm_at_f32_avx512): the
// weight gradients dW = dY^T X, summed over a step's tokens, and the head's over a chunk of them.
// It takes every shape with k even. Where C is wider than tall (c_proj's gradient) it computes
// C^T = B^T A, taller than wide, into scratch and transposes that into C (splitting C's columns
// between the threads instead only matched oneDNN).
//
// Blocked along k as in GotoBLAS. For each block of kc rows of A and B, each thread packs the
// block of B into 32-column pair panels (gemm_rows_avx512.cc's layout; kc keeps it within
// kBlockBytes, in L2), then walks its own rows of C 32 at a time: it packs those 32 columns of A's
// block into four strips of 8 (a pair of rows of A per pair-row, in L1) and runs each strip
// against every panel, the 8 x 32 tile adding the block's sum to C (loaded and stored once a
// block). The threads split C's rows by work stealing, a block at a time (run_rows).
// Built with -mavx512*; called only after a CPUID check.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx512.h"
#include "backends/cpu/steal_ranges.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

constexpr int64_t kPanel = 32;              // columns of a B panel and of a tile
constexpr int64_t kStrip = 8;               // rows of a tile: columns of A in a packed strip
constexpr int64_t kGroup = 4 * kStrip;      // columns of A packed together: a 64-byte line a row
constexpr int64_t kBlockBytes = 512 << 10;  // the packed block of B, at most
constexpr int64_t kAhead = 2;               // slices a fetch runs ahead (Next)

// How an operand is read: as stored, or through the MLP's activation from its pre-activation
// (relu2_fwd_bf16's bf16(relu(x)²), or gelu_fwd_bf16's values), so that no pass writes the
// activation out first.
enum class Act { kNone, kRelu2, kGelu };

// The packers' reading: for each pair-row kk of rows k0 .. k0 + kb (kb even; ld elements apart)
// and each 32 columns from j of 0 .. cols - 1, emit(kk, j, v0, v1) with the two rows' 32
// elements there, through `act` (zeros past cols: both activations keep 0). Row by row, so that
// the rows are read front to back (32 columns at a time down the rows, they missed the caches
// line by line).
template <class Emit>
void for_row_pairs(const uint16_t* x, int64_t ld, int64_t cols, int64_t k0, int64_t kb, Act act, Emit&& emit) {
  static_assert(kGroup == kPanel, "one reading for both packers");
  for (int64_t kk = 0; kk < kb / 2; ++kk) {
    const uint16_t* const r0 = x + (k0 + 2 * kk) * ld;
    const uint16_t* const r1 = r0 + ld;
    for (int64_t j = 0; j < cols; j += kPanel) {
      const __mmask32 msk = lanes32(cols - j);
      const __m512i v0 = load_masked_epi16(msk, r0 + j), v1 = load_masked_epi16(msk, r1 + j);
      if (act == Act::kRelu2) emit(kk, j, relu2_bf16x32(v0), relu2_bf16x32(v1));
      else if (act == Act::kGelu) emit(kk, j, gelu_bf16x32(v0), gelu_bf16x32(v1));
      else emit(kk, j, v0, v1);
    }
  }
}

// Columns 0 .. cols - 1 of A's rows k0 .. k0 + kb packed in groups of 32 columns, group g at dst
// + g kb 32: four strips of kb / 2 pair-rows, strip s at + s kb 8, its pair-row kk holding the
// pairs (A(k0 + 2 kk, i), A(k0 + 2 kk + 1, i)) for i = 32 g + 8 s .. 32 g + 8 s + 7 (zeros past
// cols), 16 elements.
void pack_a(uint16_t* dst, const uint16_t* a, int64_t ld, int64_t cols, int64_t k0, int64_t kb, Act act) {
  const int64_t strip = kb * kStrip;
  for_row_pairs(a, ld, cols, k0, kb, act, [&](int64_t kk, int64_t j, __m512i v0, __m512i v1) {
    const __m512i lo = interleave_bf16_rows(v0, v1, 0), hi = interleave_bf16_rows(v0, v1, 1);
    uint16_t* const d = dst + j * kb + kk * 2 * kStrip;
    _mm256_store_si256(reinterpret_cast<__m256i*>(d), _mm512_castsi512_si256(lo));
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + strip), _mm512_extracti64x4_epi64(lo, 1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + 2 * strip), _mm512_castsi512_si256(hi));
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + 3 * strip), _mm512_extracti64x4_epi64(hi, 1));
  });
}

// Columns 0 .. cols - 1 of B's rows k0 .. k0 + kb packed in panels of 32 columns, panel p at dst +
// p kb 32: kb / 2 pair-rows of 32 pairs (zeros past cols).
void pack_b(uint16_t* dst, const uint16_t* b, int64_t ld, int64_t cols, int64_t k0, int64_t kb, Act act) {
  for_row_pairs(b, ld, cols, k0, kb, act, [&](int64_t kk, int64_t j, __m512i v0, __m512i v1) {
    uint16_t* const d = dst + j * kb + kk * 2 * kPanel;
    _mm512_store_si512(d, interleave_bf16_rows(v0, v1, 0));
    _mm512_store_si512(d + kPanel, interleave_bf16_rows(v0, v1, 1));
  });
}

// Fetch into L2 the lines of rows k0 + 2 kk0 .. k0 + 2 kk1 - 1 (ld elements apart) that hold
// elements j0 .. j0 + cols - 1.
void fetch_rows(const uint16_t* x, int64_t ld, int64_t j0, int64_t cols, int64_t k0, int64_t kk0, int64_t kk1) {
  for (int64_t r = k0 + 2 * kk0; r < k0 + 2 * kk1; ++r)
    for (int64_t j = 0; j < cols; j += 32)
      _mm_prefetch(reinterpret_cast<const char*>(x + r * ld + j0 + j), _MM_HINT_T1);
}

// C's rows (`rows` <= 8 of them, ldc apart) x 32 columns under mask msk (+)= strip ap x panel bp
// over k2 pair-rows; with load the tile starts from C, else from zero. `next` is the next
// tile's C, fetched meanwhile.
void tile(float* c, int64_t ldc, int64_t rows, __mmask32 msk, const uint16_t* ap, const uint16_t* bp, int64_t k2,
          bool load, const float* next) {
  const __mmask16 m0 = __mmask16(msk), m1 = __mmask16(msk >> 16);
  __m512 c0[kStrip], c1[kStrip];
#pragma GCC unroll 8
  for (int r = 0; r < kStrip; ++r) {
    const bool in = load && r < rows;
    c0[r] = in ? load_masked_ps(m0, c + r * ldc) : _mm512_setzero_ps();
    c1[r] = in ? load_masked_ps(m1, c + r * ldc + 16) : _mm512_setzero_ps();
  }
  if (next)
    for (int64_t r = 0; r < rows; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(next + r * ldc), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(next + r * ldc + 16), _MM_HINT_T1);
    }
  // (The panel's pairs all loaded: zeros past n, and the stores below masked.)
  bf16_tile_product<kStrip, 2 * kStrip>(c0, c1, ap, 2, bp, 2 * kPanel, k2, __mmask16(0xffff), __mmask16(0xffff));
  // (Rows by constant index, so that the accumulators stay in registers.)
#pragma GCC unroll 8
  for (int r = 0; r < kStrip; ++r)
    if (r < rows) {
      store_masked_ps(c + r * ldc, m0, c0[r]);
      store_masked_ps(c + r * ldc + 16, m1, c1[r]);
    }
}

// What the tiles fetch while they run: the lines that the next packing will read (the next
// group's columns of A, one line a row, or the next block of B), a slice of `per` pair-rows a
// tile, kAhead slices ahead of an even spread (the first tile fetches the first slices too).
// Packing from memory, the loads would miss the caches one by one and leave the tiles idle;
// fetched a whole group ahead at once, rows a power of two apart (the head's, 16 KiB) fall into a
// few sets of L2 and evict each other.
struct Next {
  const uint16_t* x = nullptr;  // nullptr: nothing follows
  int64_t ld = 0, j0 = 0, cols = 0, k0 = 0, kb = 0;
  int64_t per = 0;

  void slice(int64_t q) const {
    if (!x) return;
    const int64_t s0 = (q == 0 ? 0 : q + kAhead) * per, end = (q + kAhead + 1) * per;
    const int64_t s1 = end < kb / 2 ? end : kb / 2;
    if (s0 < s1) fetch_rows(x, ld, j0, cols, k0, s0, s1);
  }
};

// One thread's part of the product: for each block of kc rows of A and B, it packs the block of B,
// then takes groups of 32 rows of C from the block's StealRanges (its own range of groups first,
// then the other threads' leftovers) and runs each against every panel. A barrier ends each
// block, so that no two threads hold one group of C in different blocks. C's row i is at
// c + i n. act_a, act_b: how each operand is read (for_row_pairs).
void run_rows(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
              int64_t kc, StealRanges* ranges, bool add, Act act_a, Act act_b) {
  const int t = omp_get_thread_num();
  const int64_t panels = (n + kPanel - 1) / kPanel;
  const int64_t g0 = ranges[0].first(t), g1 = ranges[0].end(t);  // the thread's own range (every block's)
  uint16_t* const bp =
      static_cast<uint16_t*>(thread_scratch(ctx, kScratchAtB, size_t(panels * kc * kPanel) * sizeof(uint16_t)));
  uint16_t* const ap = static_cast<uint16_t*>(thread_scratch(ctx, kScratchAtA, size_t(kc * kGroup) * sizeof(uint16_t)));
  for (int64_t k0 = 0, block = 0; k0 < k; k0 += kc, ++block) {
    const int64_t kb = k - k0 < kc ? k - k0 : kc;
    const bool load = add || k0 > 0;
    pack_b(bp, b, n, n, k0, kb, act_b);
    // The next block of B (whole rows) is fetched during the last quarter of this block's own
    // groups (earlier, the block's traffic through L2 would evict it before use).
    const int64_t tail = (g1 - g0 + 3) / 4;
    Next nb;
    if (k0 + kb < k && tail > 0) {
      nb.x = b, nb.ld = n, nb.cols = n, nb.k0 = k0 + kb, nb.kb = k - nb.k0 < kc ? k - nb.k0 : kc;
      nb.per = (nb.kb / 2 + tail * 4 * panels - 1) / (tail * 4 * panels);
    }
    int64_t qb = 0;
    for (int64_t g; (g = ranges[block].next(t)) >= 0;) {
      pack_a(ap, a + kGroup * g, m, m - kGroup * g < kGroup ? m - kGroup * g : kGroup, k0, kb, act_a);
      const int64_t strips = (m - kGroup * g + kStrip - 1) / kStrip < 4 ? (m - kGroup * g + kStrip - 1) / kStrip : 4;
      const int64_t tiles = strips * panels;
      const bool own = g >= g0 && g < g1;
      Next next;  // the thread's next own group, or the next block's first (none after a stolen one)
      if (own && (g + 1 < g1 || k0 + kb < k)) {
        next.x = a, next.ld = m, next.j0 = kGroup * (g + 1 < g1 ? g + 1 : g0), next.cols = kGroup;
        next.k0 = g + 1 < g1 ? k0 : k0 + kb, next.kb = k - next.k0 < kc ? k - next.k0 : kc;
        next.per = (next.kb / 2 + tiles - 1) / tiles;
      }
      int64_t q = 0;
      for (int64_t s = 0; s < strips; ++s) {
        const int64_t i = kGroup * g + kStrip * s, rows = m - i < kStrip ? m - i : kStrip;
        for (int64_t p = 0; p < panels; ++p, ++q) {
          next.slice(q);
          if (own && g >= g1 - tail) nb.slice(qb++);
          float* const ct = c + i * n + kPanel * p;
          tile(ct, n, rows, lanes32(n - kPanel * p), ap + s * kb * kStrip, bp + p * kb * kPanel, kb / 2, load,
               load && p + 1 < panels ? ct + kPanel : nullptr);
        }
      }
    }
#pragma omp barrier
  }
}

// C's columns r0 .. r1 - 1 (ldc apart rows, m of them) = or += rows r0 .. r1 - 1 of C^T, held in
// s (m floats a row, from row r0), in 16 x 16 blocks through registers.
void store_transposed(float* c, int64_t ldc, const float* s, int64_t m, int64_t r0, int64_t r1, bool add) {
  for (int64_t r = r0; r < r1; r += 16) {
    const __mmask16 cols = lanes16(r1 - r);
    for (int64_t i = 0; i < m; i += 16) {
      const __mmask16 in = lanes16(m - i);
      __m512i t[16];
      for (int e = 0; e < 16; ++e)
        t[e] = r + e < r1 ? load_masked_epi32(in, s + (r + e - r0) * m + i) : _mm512_setzero_si512();
      transpose16(t);
      const int64_t rows = m - i < 16 ? m - i : 16;
      for (int64_t e = 0; e < rows; ++e) {
        float* const d = c + (i + e) * ldc + r;
        __m512 v = _mm512_castsi512_ps(t[e]);
        if (add) v = _mm512_add_ps(v, load_masked_ps(cols, d));
        store_masked_ps(d, cols, v);
      }
    }
  }
}

// k in blocks of kc (even), as few as keep the packed block of B (n columns) within kBlockBytes.
int64_t block_rows(int64_t n, int64_t k) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  int64_t kc_max = kBlockBytes / (panels * kPanel * int64_t(sizeof(uint16_t)));
  kc_max = kc_max < 64 ? 64 : kc_max & ~int64_t(1);
  const int64_t blocks = (k + kc_max - 1) / kc_max;
  return ((k + blocks - 1) / blocks + 1) & ~int64_t(1);
}

}  // namespace

bool gemm_at_f32_avx512(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                        int64_t k, bool add, bool relu2_b, bool gelu) {
  const Act act = !relu2_b ? Act::kNone : gelu ? Act::kGelu : Act::kRelu2;
  if (m < 1 || n < 1 || k < 2 || k % 2 != 0) return false;
  // C wider than tall (c_proj's gradient): C^T = B^T A, taller than wide, by the same product into
  // scratch, then transposed into C. The transpose reads and writes C once; the product loads and
  // stores it once a k block.
  const bool wide = (m + kGroup - 1) / kGroup < (n + kPanel - 1) / kPanel;
  const int64_t rows = wide ? n : m, cols = wide ? m : n;  // the product's C: (rows, cols)
  const uint16_t* const pa = wide ? b : a;
  const uint16_t* const pb = wide ? a : b;
  const int64_t groups = (rows + kGroup - 1) / kGroup, kc = block_rows(cols, k);
  // Each block's groups shared out by work stealing (steal_ranges.h): on a shared machine one core
  // can run slower than the other for a while, and with a static split the faster thread would
  // wait at the end of every product.
  const int threads = ctx.threads();
  std::vector<StealRanges> ranges;
  ranges.reserve(size_t((k + kc - 1) / kc));
  for (int64_t k0 = 0; k0 < k; k0 += kc) ranges.emplace_back(groups, threads);
  float* const ct =
      wide ? static_cast<float*>(thread_scratch(ctx, kScratchAtT, size_t(rows * cols) * sizeof(float))) : nullptr;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("gemm at");
    run_rows(ctx, wide ? ct : c, pa, pb, rows, cols, k, kc, ranges.data(), add && !wide, wide ? act : Act::kNone,
             wide ? Act::kNone : act);
    if (wide) {  // (run_rows ends with a barrier: C^T is whole)
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t r0 = kGroup * (groups * t / nt), r1 = std::min(rows, kGroup * (groups * (t + 1) / nt));
      if (r0 < r1) store_transposed(c, n, ct + r0 * cols, m, r0, r1, add);
    }
  }
  return true;
}

}  // namespace nt::cpu
