// SPDX-License-Identifier: MIT
// AMX tile configuration shared by the AMX kernels (included only by *_amx.cc translation units,
// which are built with -mamx-tile -mamx-bf16 and called only when cpu_features().amx_bf16).
//
// Every kernel here uses one shape for all eight tile registers: 16 rows of 64 bytes (16 fp32
// accumulators, 32 bf16 of A, or 16 packed bf16 pairs of B). The configuration is per thread and
// oneDNN's AMX kernels load their own, so each kernel loads ours on entry (ldtilecfg is cheap
// next to the thousands of cycles of one call's tile products). Both AMX units share the block
// of tile products below.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace nt::cpu {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  AmxTileConfig() {
    for (int t = 0; t < 8; ++t) colsb[t] = 64, rows[t] = 16;
  }
};

inline void load_full_tile_config() {
  static const AmxTileConfig cfg;
  _tile_loadconfig(&cfg);
}

// Where one operand's tiles of a block are: tile r (0 or 1: rows 0-15 or 16-31 of A, columns
// 0-15 or 16-31 of B) at k-step s starts at p + r * next + s * step (elements), its 16 rows
// `stride` bytes apart.
struct TileOperand {
  const uint16_t* p;
  int64_t next, step, stride;
};

// C[0:16 MI, 0:16 NJ] (+)= A B over `steps` k-steps of 32 bf16 (16 pairs), with up to 2 x 2
// accumulator tiles: C tiles 0 (rows 0-15, cols 0-15), 1 (cols 16-31), 2 (rows 16-31), 3; A
// tiles 4, 5; B tiles 6, 7. C is fp32 with row stride ldc floats; `load`: start from C, else
// from zero. Each step loads at most two A and two B tiles for four tdpbf16ps.
template <int MI, int NJ>
inline void tile_block(const TileOperand& a, const TileOperand& b, int64_t steps, float* c, int64_t ldc,
                       bool load) {
  const int64_t sc = ldc * 4;
  float* c2 = c + 16 * ldc;
  if (load) {
    _tile_loadd(0, c, sc);
    if constexpr (NJ > 1) _tile_loadd(1, c + 16, sc);
    if constexpr (MI > 1) _tile_loadd(2, c2, sc);
    if constexpr (MI > 1 && NJ > 1) _tile_loadd(3, c2 + 16, sc);
  } else {
    _tile_zero(0);
    if constexpr (NJ > 1) _tile_zero(1);
    if constexpr (MI > 1) _tile_zero(2);
    if constexpr (MI > 1 && NJ > 1) _tile_zero(3);
  }
  for (int64_t s = 0; s < steps; ++s) {
    _tile_loadd(4, a.p + s * a.step, a.stride);
    _tile_loadd(6, b.p + s * b.step, b.stride);
    if constexpr (NJ > 1) _tile_loadd(7, b.p + b.next + s * b.step, b.stride);
    if constexpr (MI > 1) _tile_loadd(5, a.p + a.next + s * a.step, a.stride);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NJ > 1) _tile_dpbf16ps(1, 4, 7);
    if constexpr (MI > 1) _tile_dpbf16ps(2, 5, 6);
    if constexpr (MI > 1 && NJ > 1) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, sc);
  if constexpr (NJ > 1) _tile_stored(1, c + 16, sc);
  if constexpr (MI > 1) _tile_stored(2, c2, sc);
  if constexpr (MI > 1 && NJ > 1) _tile_stored(3, c2 + 16, sc);
}

}  // namespace nt::cpu
