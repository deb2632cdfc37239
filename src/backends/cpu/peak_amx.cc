// SPDX-License-Identifier: MIT
// The AMX bf16 peak loop (built with -mamx-*; called only when cpu_features().amx_bf16).
#include "backends/cpu/amx_tiles.h"
#include "backends/cpu/peak.h"

namespace nt::cpu {

double peak_bf16_amx_gflops(double seconds) {
  // Four accumulator tiles fed by two A and two B tiles that stay in registers: each tdpbf16ps
  // is 16 x 16 outputs x 32 bf16 products, 16384 FLOP, and the four are independent.
  return timed_parallel(seconds, 4.0 * 16 * 16 * 32 * 2, [](int64_t n) {
    alignas(64) uint16_t ab[16 * 32];
    alignas(64) float c[16 * 16];
    for (uint16_t& x : ab) x = 0x3a83;  // bf16 1e-3
    load_full_tile_config();
    _tile_loadd(4, ab, 64);
    _tile_loadd(5, ab, 64);
    _tile_loadd(6, ab, 64);
    _tile_loadd(7, ab, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t it = 0; it < n; ++it) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    float s = c[0];
    _tile_stored(3, c, 64);
    s += c[255];
    _tile_release();
    return s;
  });
}

double peak_bf16_amx_loaded_gflops(double seconds) {
  // A GEMM's best case on tiles: 2 x 2 accumulators with their two A and two B tiles loaded
  // for every step, as any GEMM must (8 tile registers allow no more reuse), from a 16 KiB
  // buffer that stays in L1. Where a tile load costs more than a tdpbf16ps this is the bound.
  return timed_parallel(seconds, 4.0 * 16 * 16 * 32 * 2, [](int64_t n) {
    alignas(64) uint16_t ab[16][16 * 32];
    alignas(64) float c[16 * 16];
    for (auto& tile : ab)
      for (uint16_t& x : tile) x = 0x3a83;  // bf16 1e-3
    load_full_tile_config();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t it = 0; it < n; ++it) {
      const int64_t s = 4 * (it & 3);
      _tile_loadd(4, ab[s], 64);
      _tile_loadd(6, ab[s + 1], 64);
      _tile_loadd(7, ab[s + 2], 64);
      _tile_loadd(5, ab[s + 3], 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 64);
    float s = c[0];
    _tile_stored(3, c, 64);
    s += c[255];
    _tile_release();
    return s;
  });
}

}  // namespace nt::cpu
