// SPDX-License-Identifier: MIT
// Whole bf16 GEMMs on AMX tiles (contract in gemm.h), for the model's linear layers, their
// weight gradients and the head's gradients on CPUs with AMX, where they beat oneDNN's AMX matmul
// (gemm_routes.cc says where it is used).
//
// The product is P(M, N) = X(M, K) Y(K, N) with X = op(A), Y = op(B), written to C. For A^T B
// (the weight gradients) X is packed from A's columns, 16 x 16 blocks transposed, whichever
// operand is larger: computing P^T = B^T A instead, to transpose the smaller one, would write C
// transposed, which costs more than it saves. Per chunk of reductions (kChunk, below):
//   - Y is packed once, by all threads, into AMX's B layout: per 16 columns, the k pairs' rows
//     of 16 x 2 bf16 (one tile = 16 pair rows, 1 KiB, contiguous);
//   - each thread takes blocks of X rows (about 512 KiB, in L2): read in place where X's rows
//     are aligned whole 32-k steps (under an fp32 C), else packed into AMX's A layout (per 16
//     rows and 32 k, one contiguous 1 KiB tile; from long rows of A, X is packed whole, by all
//     threads, before the blocks run); then for each few column blocks of 32 it runs
//     the 32 x 32 blocks of its rows, 32 rows at a time, with 2 x 2 accumulator tiles (the B
//     panels stay in cache across the rows, each 32 rows of X across the column blocks).
// Rows, columns and reductions past the ends are packed as zeros, so every tile product is
// whole. C += P on whole fp32 blocks goes from C to the tiles and back; every other block goes
// through a staging block of 32 fp32 rows (edges, bf16 C, beta other than 1), and onto a large C
// with streaming stores, in runs of up to 8 column blocks along its rows. Every tile operand is
// 64-byte aligned: a tile row across two cache lines loads several times slower. Built with -mamx-tile
// -mamx-bf16 (and AVX-512 BW, VL, BF16); called only when cpu_features().amx_bf16. Like the other
// vector units it instantiates no standard-library code.
#include <omp.h>

#include "backends/cpu/amx_tiles.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/simd_avx512.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

// Reductions per chunk (multiples of 32); shorter where X is packed too (the weight gradients,
// A^T B over the batch): more X rows then share each pass over the packed Y.
constexpr int64_t kChunk = 4096, kChunkPackedX = 2048;
constexpr int64_t kXBlockBytes = 512 * 1024;  // packed X rows per block (L2-resident)
// C from this size up is written past the caches (8 MiB: C goes out in long runs, below, so the
// (N, C) products of the cpu and depth-6 presets gain too).
constexpr int64_t kStreamBytes = 8 << 20;
constexpr int64_t kMaxWide = 8;               // column blocks of 32 staged at once (below)
// X packed from A's columns is packed whole per chunk, by all threads, where A's rows are at
// least kSharedXRowBytes long and that X at most kSharedXBytes (matmul_bf16_amx says why).
constexpr int64_t kSharedXBytes = 16 << 20, kSharedXRowBytes = 2 << 10;
// X is read in place only where its rows are at most this far apart. A tile's 16 rows 64 KiB
// apart fall into two L2 sets (and 16 pages): the frontier preset's head data gradient (dlogits
// W, rows of V 32768 bf16) runs faster with X packed; the MLP's 4 KiB rows run faster in place.
constexpr int64_t kInPlaceRowBytes = 32 << 10;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t clamp_count(int64_t x, int64_t hi) { return x < 0 ? 0 : x > hi ? hi : x; }
// The bf16 at p under mask m, or zeros where the whole line is past the operand's end (p is
// then not read).
__m512i line_or_zero(bool inside, const uint16_t* p, __mmask32 m) {
  return inside ? _mm512_maskz_loadu_epi16(m, p) : _mm512_setzero_si512();
}

// One operand as the product reads it: element (i, kk) at p[i * row + kk * col] with exactly one
// of row, col equal to 1 (k contiguous, or the other index contiguous); relu2: the values are
// bf16(relu(x)²) of the x stored (the MLP's activation, applied as the operand is packed).
struct Operand {
  const uint16_t* p;
  int64_t row, col;
  bool relu2 = false;
};

// 32 bf16 as the operand's values: relu2_fwd_bf16's bf16(relu(x)²) where the operand says so.
__m512i values(const Operand& o, __m512i v) { return o.relu2 ? relu2_bf16x32(v) : v; }

// X rows [i0 + 16 g, i0 + 16 g + 32) (of the mr from i0) at k-step s of reductions [k0, k0 + kc)
// into their two tiles of dst, a layout of `steps` k-steps: tile (g, s) at (g steps + s) 512.
// The pair of groups makes every load a whole 64-byte line.
void pack_x_pair(uint16_t* dst, const Operand& x, int64_t i0, int64_t mr, int64_t steps, int64_t g, int64_t s,
                 int64_t k0, int64_t kc) {
  const int64_t rows = clamp_count(mr - 16 * g, 32), ks = clamp_count(kc - 32 * s, 32);
  const int64_t ib = i0 + 16 * g, kb = k0 + 32 * s;
  if (x.col == 1) {  // k contiguous: copy 32 bf16 a row
    for (int64_t r = 0; r < 32; ++r) {
      const __m512i v = values(x, line_or_zero(r < rows, x.p + (ib + r) * x.row + kb, lanes32(ks)));
      _mm512_store_si512(dst + ((g + r / 16) * steps + s) * 512 + 32 * (r % 16), v);
    }
    return;
  }
  // Rows contiguous: interleave k pairs along 32 rows (one line a k) into both tiles' pairs at
  // once, then transpose the pairs of each 16. Each line is read once: A's rows are often a
  // multiple of 4 KiB apart, so the 32 lines share one L1 set, and reading them again for the
  // second tile would miss L1.
  const __mmask32 rm = lanes32(rows);
  __m512i v[2][16];
  for (int64_t q = 0; q < 16; ++q) {
    const __m512i lo = values(x, line_or_zero(2 * q < ks, x.p + (kb + 2 * q) * x.col + ib, rm));
    const __m512i hi = values(x, line_or_zero(2 * q + 1 < ks, x.p + (kb + 2 * q + 1) * x.col + ib, rm));
    v[0][q] = interleave_bf16_rows(lo, hi, 0);
    v[1][q] = interleave_bf16_rows(lo, hi, 1);
  }
  for (int h = 0; h < 2; ++h) {
    transpose16(v[h]);
    uint16_t* tile = dst + ((g + h) * steps + s) * 512;
    for (int r = 0; r < 16; ++r) _mm512_store_si512(tile + 32 * r, v[h][r]);
  }
}

// X rows [i0, i0 + mr) and reductions [k0, k0 + kc) into tiles: groups of 16 rows (an even count),
// steps of 32 k. Along X's contiguous index: a row's k-steps in turn, or (rows contiguous) a
// k-step's groups in turn, so that each of A's rows is read as one run of lines.
void pack_x(uint16_t* dst, const Operand& x, int64_t i0, int64_t mr, int64_t groups, int64_t k0, int64_t kc) {
  const int64_t steps = round_up(kc, 32) / 32;
  if (x.col == 1) {
    for (int64_t g = 0; g < groups; g += 2)
      for (int64_t s = 0; s < steps; ++s) pack_x_pair(dst, x, i0, mr, steps, g, s, k0, kc);
  } else {
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t g = 0; g < groups; g += 2) pack_x_pair(dst, x, i0, mr, steps, g, s, k0, kc);
  }
}

// Y (reductions [k0, k0 + kc)) goes into B tiles: per 16-column panel, pair rows of 16 x 2 bf16,
// (kc rounded up to 32) / 2 of them.
//
// Columns contiguous: pair rows [kk0, kk1) of every panel, interleaving Y's rows 2 kk and
// 2 kk + 1 a 64-byte line at a time. Each thread walks whole rows of Y: walking one panel down
// its rows instead would touch a new 4 KiB page every line (rows of the weight gradients'
// operands are 2-4 KiB), which the hardware prefetchers do not follow.
void pack_y_rows(uint16_t* dst, const Operand& y, int64_t n, int64_t kk0, int64_t kk1, int64_t k0, int64_t kc) {
  const int64_t pairs = round_up(kc, 32) / 2, panel_pairs = round_up(n, 32) / 32;
  for (int64_t kk = kk0; kk < kk1; ++kk) {
    const uint16_t* lo_row = y.p + (k0 + 2 * kk) * y.row;
    const bool lo_in = 2 * kk < kc, hi_in = 2 * kk + 1 < kc;
    for (int64_t q = 0; q < panel_pairs; ++q) {
      const __mmask32 cm = lanes32(n - 32 * q);
      const __m512i lo = values(y, line_or_zero(lo_in, lo_row + 32 * q, cm));
      const __m512i hi = values(y, line_or_zero(hi_in, lo_row + y.row + 32 * q, cm));
      uint16_t* panel = dst + 2 * q * pairs * 32;
      _mm512_store_si512(panel + 32 * kk, interleave_bf16_rows(lo, hi, 0));
      _mm512_store_si512(panel + pairs * 32 + 32 * kk, interleave_bf16_rows(lo, hi, 1));
    }
  }
}

// k contiguous: panels 2 q and 2 q + 1, each column's 16 pairs of a 32-k step being 16 32-bit
// words: transposed.
void pack_y_panels(uint16_t* dst, const Operand& y, int64_t n, int64_t q, int64_t k0, int64_t kc) {
  const int64_t pairs = round_up(kc, 32) / 2;
  uint16_t* panel = dst + 2 * q * pairs * 32;
  for (int64_t h = 0; h < 2; ++h, panel += pairs * 32) {
    const int64_t cols = clamp_count(n - 32 * q - 16 * h, 16), jb = 32 * q + 16 * h;
    for (int64_t s = 0; s < pairs / 16; ++s) {
      __m512i v[16];
      const int64_t ks = clamp_count(kc - 32 * s, 32);
      for (int64_t j = 0; j < 16; ++j)
        v[j] = values(y, line_or_zero(j < cols, y.p + (jb + j) * y.col + k0 + 32 * s, lanes32(ks)));
      transpose16(v);
      for (int r = 0; r < 16; ++r) _mm512_store_si512(panel + 32 * (16 * s + r), v[r]);
    }
  }
}

// Where the product goes: C (fp32 or bf16, row stride ldc); stream: C is too
// large to stay in cache for its reader.
struct Output {
  void* c;
  int64_t ldc;
  bool bf16, stream;
};

// Block P[i0:i0+mr, j0:j0+nc] from the fp32 block t (32 rows of tld floats, nc <= tld) into
// C = t + beta C. Whole rows of a large aligned C that need no read (beta 0) are written with
// streaming stores: with ordinary ones each line's read for ownership costs as much as the
// block's tile products. On a C that fits in cache they cost its reader more than they save (the
// logits' cross-entropy, Newton-Schulz). The caller fences before another thread reads C.
void store_block(const Output& o, const float* t, int64_t tld, int64_t i0, int64_t j0, int64_t mr, int64_t nc,
                 float beta) {
  const int64_t elem = o.bf16 ? 2 : 4;
  char* row0 = static_cast<char*>(o.c) + (i0 * o.ldc + j0) * elem;
  if (o.stream && nc % 32 == 0 && (o.bf16 || beta == 0.0f) &&
      (reinterpret_cast<uintptr_t>(row0) & 63) == 0 && (o.ldc * elem) % 64 == 0) {
    for (int64_t r = 0; r < mr; ++r) {
      char* dst = row0 + r * o.ldc * elem;
      for (int64_t h = 0; h < nc; h += 32) {
        const __m512 lo = _mm512_load_ps(t + tld * r + h), hi = _mm512_load_ps(t + tld * r + h + 16);
        if (o.bf16) {
          _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + 2 * h), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        } else {
          _mm512_stream_ps(reinterpret_cast<float*>(dst) + h, lo);
          _mm512_stream_ps(reinterpret_cast<float*>(dst) + h + 16, hi);
        }
      }
    }
    return;
  }
  auto put = [&](int64_t ci, int64_t cj, __m512 v, int64_t count) {  // 16 (or count) values of C's row ci
    const __mmask16 m = lanes16(count);
    if (o.bf16) {
      _mm256_mask_storeu_epi16(static_cast<uint16_t*>(o.c) + ci * o.ldc + cj, m, bf16x16(v));
      return;
    }
    float* dst = static_cast<float*>(o.c) + ci * o.ldc + cj;
    if (beta != 0.0f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m, dst), v);
    _mm512_mask_storeu_ps(dst, m, v);
  };
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t h = 0; h < nc; h += 16) put(i0 + r, j0 + h, _mm512_load_ps(t + tld * r + h), nc - h);
}

// The packed form of op(B) (reductions [k0, k0 + kc)) at dst: per chunk, what the product packs.
// Called inside a parallel region: the threads share the work.
void pack_y_chunk(uint16_t* dst, const Operand& y, int64_t n, int64_t k0, int64_t kc) {
  if (y.col == 1) {
    const int64_t pairs = round_up(kc, 32) / 2;
#pragma omp for schedule(static)
    for (int64_t kk = 0; kk < pairs; kk += 16) pack_y_rows(dst, y, n, kk, kk + 16 < pairs ? kk + 16 : pairs, k0, kc);
  } else {
    const int64_t panels = round_up(n, 32) / 16;
#pragma omp for schedule(static)
    for (int64_t q = 0; q < panels / 2; ++q) pack_y_panels(dst, y, n, q, k0, kc);
  }
}

}  // namespace

// Chunks of kChunk reductions (the chunk of an X read in place), each its own packed block.
int64_t amx_packed_b_size(const ExecContext& ctx, int64_t n, int64_t k) {
  const int64_t panels = round_up(n, 32) / 16, full = k / kChunk;
  return panels * 16 * (full * kChunk + round_up(k - full * kChunk, 32));
}

void amx_pack_b(const ExecContext& ctx, uint16_t* packed, const uint16_t* b, int64_t n, int64_t k, bool tb) {
  const Operand y = tb ? Operand{b, 1, k} : Operand{b, n, 1};
  const int64_t panels = round_up(n, 32) / 16;
#pragma omp parallel num_threads(ctx.threads())
  for (int64_t k0 = 0; k0 < k; k0 += kChunk)
    pack_y_chunk(packed + panels * 16 * k0, y, n, k0, k - k0 < kChunk ? k - k0 : kChunk);
}

bool matmul_bf16_amx(const ExecContext& ctx, void* c, int64_t ldc, bool bf16_out, const uint16_t* a, const uint16_t* b,
                     int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, Relu2Operand relu2,
                     const uint16_t* packed_b) {
  if (ta && tb) return false;
  // P = X Y with X(i, kk) and Y(kk, j) as Operands.
  const bool relu2_x = relu2 == Relu2Operand::kA, relu2_y = relu2 == Relu2Operand::kB;
  const Operand x = ta ? Operand{a, 1, m, relu2_x} : Operand{a, k, 1, relu2_x};
  const Operand y = tb ? Operand{b, 1, k, relu2_y} : Operand{b, n, 1, relu2_y};
  const Output out{c, ldc, bf16_out, m * n * (bf16_out ? 2 : 4) >= kStreamBytes};
  // X's rows are read in place where they are whole aligned k-steps (no packing), except under a
  // bf16 C, where the packed X is faster (the MLP's up product).
  const bool x_in_place = !bf16_out && !x.relu2 && x.col == 1 && k % 32 == 0 &&
                          (reinterpret_cast<uintptr_t>(x.p) & 63) == 0 && x.row % 32 == 0 &&
                          x.row * 2 <= kInPlaceRowBytes;
  // C's whole blocks go to and from the tiles directly where its rows are aligned lines.
  const bool c_lines = !bf16_out && (reinterpret_cast<uintptr_t>(c) & 63) == 0 && ldc % 16 == 0;

  // bf16 C is written once, so its reduction is one chunk; a packed B comes in kChunk chunks.
  const int64_t chunk = packed_b ? kChunk : bf16_out ? round_up(k, 32) : x_in_place ? kChunk : kChunkPackedX;
  const int64_t kc_max = k < chunk ? round_up(k, 32) : chunk;
  const int64_t panels = round_up(n, 32) / 16;
  // Row blocks of about kXBlockBytes, at least two a thread where there are rows enough, handed
  // out in order (static), so that each thread writes about the rows that the next op's own
  // static split gives it. Too few rows for the threads: the columns are split too.
  const int64_t threads = ctx.threads();
  int64_t block_rows = kXBlockBytes / (2 * kc_max) / 32 * 32;
  const int64_t rows_per_thread = round_up(m, 32 * 2 * threads) / (2 * threads);
  if (block_rows > rows_per_thread) block_rows = rows_per_thread;
  if (block_rows < 32) block_rows = 32;
  // A whole number of blocks a thread, as even as 32-row multiples allow.
  const int64_t nblocks = round_up((m + block_rows - 1) / block_rows, threads);
  block_rows = round_up((m + nblocks - 1) / nblocks, 32);
  const int64_t xblocks = (m + block_rows - 1) / block_rows;
  int64_t col_parts = (2 * threads + xblocks - 1) / xblocks;
  if (col_parts > panels / 2) col_parts = panels / 2;
  if (col_parts < 1) col_parts = 1;
  const int64_t units = xblocks * col_parts, col_pairs = panels / 2;

  uint16_t* const y_scratch =
      packed_b ? nullptr : static_cast<uint16_t*>(thread_scratch(ctx, kScratchAmxY, size_t(panels * 16 * kc_max) * 2));
  // X packed from long rows of A (the weight gradients of the MLP's up product and of q, k, v:
  // A's rows F or H D + 2 KVH D bf16) over long chunks is packed whole per chunk, by all threads
  // a k-step at a time: each of A's rows is then read in one run (per row block of 128 rows of X
  // at 2,048 reductions, in runs of 256 bytes, at half the rate). Shorter rows or chunks are
  // packed per block: there the whole X, read back from L3 rather than packed into the core's own
  // L2, is slower (the head's weight gradient; the attention's output projection).
  const int64_t x_groups = round_up(m, 32) / 16;
  const bool shared_x = !x_in_place && x.col != 1 && x.col * 2 >= kSharedXRowBytes && kc_max >= kChunkPackedX &&
                        x_groups * 16 * kc_max * 2 <= kSharedXBytes;
  uint16_t* const x_all =
      shared_x ? static_cast<uint16_t*>(thread_scratch(ctx, kScratchAmxXAll, size_t(x_groups * 16 * kc_max) * 2))
               : nullptr;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("gemm amx");
    uint16_t* xp = static_cast<uint16_t*>(thread_scratch(ctx, kScratchAmxX, size_t(block_rows * kc_max) * 2));
    alignas(64) float t[2][32 * 32 * kMaxWide];  // staging: two blocks of 32 rows
    load_full_tile_config();
    for (int64_t k0 = 0; k0 < k; k0 += chunk) {
      const int64_t kc = k - k0 < chunk ? k - k0 : chunk, steps = round_up(kc, 32) / 32;
      const float bc = k0 == 0 ? beta : 1.0f;  // later chunks add to the first's
      // Blocks go `wide` column blocks at a time, for longer runs along C's rows: streaming
      // stores of one 64-byte line a row, rows 4 KiB apart, run at half the bandwidth of 128-byte
      // runs. The widths were measured best (docs/BENCHMARKS.md): a streamed C 8 wide over short
      // reductions, else 2; C += through the tiles (direct, below) 4 wide over short ones, else
      // 2; the rest (C in cache) 1, bf16 C 2.
      const bool short_k = kc_max <= 512, through_tiles = c_lines && bc == 1.0f;
      const int64_t wide = through_tiles ? (short_k ? 4 : 2)
                           : out.stream  ? (short_k ? kMaxWide : 2)
                           : out.bf16    ? 2
                                         : 1;
      const int64_t tld = 32 * wide;  // staging row stride
      const uint16_t* yp = packed_b ? packed_b + panels * 16 * k0 : y_scratch;
      if (!packed_b) pack_y_chunk(y_scratch, y, n, k0, kc);
      if (shared_x) {
#pragma omp for schedule(static)
        for (int64_t s = 0; s < steps; ++s)
          for (int64_t g = 0; g < x_groups; g += 2) pack_x_pair(x_all, x, 0, m, steps, g, s, k0, kc);
      }
#pragma omp for schedule(static)
      for (int64_t u = 0; u < units; ++u) {
        const int64_t i0 = (u / col_parts) * block_rows, part = u % col_parts;
        const int64_t mr = m - i0 < block_rows ? m - i0 : block_rows, groups = round_up(mr, 32) / 16;
        // A's tiles: X's own rows where they are whole aligned k-steps, else the packed block.
        TileOperand at{xp, steps * 512, 512, 64};
        if (x_in_place && mr % 32 == 0) at = {x.p + i0 * x.row + k0, 16 * x.row, 32, 2 * x.row};
        else if (shared_x) at.p = x_all + i0 / 16 * steps * 512;
        else pack_x(xp, x, i0, mr, groups, k0, kc);
        // A staged block is written out after the next block's tile products, so that its tile
        // stores have completed by the time its lines are read.
        int64_t staged_i = -1, staged_j = 0, staged_rows = 0, staged_cols = 0;
        int cur = 0;
        const int64_t q0 = col_pairs * part / col_parts, q1 = col_pairs * (part + 1) / col_parts;
        for (int64_t q = q0; q < q1; q += wide) {
          const int64_t j0 = 32 * q, nc = clamp_count(n - j0, 32 * (q1 - q < wide ? q1 - q : wide));
          for (int64_t g = 0; g < groups; g += 2) {
            const int64_t bi = i0 + 16 * g, rows = clamp_count(mr - 16 * g, 32);
            const TileOperand ag{at.p + g * at.next, at.next, at.step, at.stride};
            // C += whole blocks straight from and to the tiles; everything else through t.
            const bool direct = through_tiles && rows == 32 && nc == tld;
            for (int64_t dq = 0; dq < wide && q + dq < q1; ++dq) {
              const TileOperand bt{yp + 2 * (q + dq) * steps * 512, steps * 512, 512, 64};  // 2 panels
              if (direct)
                tile_block<2, 2>(ag, bt, steps, static_cast<float*>(c) + bi * ldc + j0 + 32 * dq, ldc, true);
              else tile_block<2, 2>(ag, bt, steps, t[cur] + 32 * dq, tld, false);
            }
            if (direct) continue;
            if (staged_i >= 0) store_block(out, t[cur ^ 1], tld, staged_i, staged_j, staged_rows, staged_cols, bc);
            staged_i = bi, staged_j = j0, staged_rows = rows, staged_cols = nc, cur ^= 1;
          }
        }
        if (staged_i >= 0) store_block(out, t[cur ^ 1], tld, staged_i, staged_j, staged_rows, staged_cols, bc);
        _mm_sfence();  // the streaming stores are seen before the barrier's
      }
    }
    _tile_release();
  }
  return true;
}

}  // namespace nt::cpu
