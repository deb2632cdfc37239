// SPDX-License-Identifier: MIT
// The AMX bf16 peak loops (built with -mamx-*; called only when cpu_features().amx_bf16).
#include "backends/cpu/amx_tiles.h"
#include "backends/cpu/peak.h"

namespace nt::cpu {

namespace {

// Four independent accumulator tiles, each tdpbf16ps 16 x 16 outputs x 32 bf16 products (16384
// FLOP), fed by two A and two B tiles. kLoaded false: the operand tiles stay in registers (the
// tiles' own rate). kLoaded true: all four are loaded again for every step, as any GEMM must
// (8 tile registers allow no more reuse than 2 x 2), from a 16 KiB buffer that stays in L1: a
// GEMM's best case, and the bound where a tile load costs more than a tdpbf16ps.
template <bool kLoaded>
double amx_rate(double seconds) {
  return timed_parallel(seconds, 4.0 * 16 * 16 * 32 * 2, [](int64_t n) {
    alignas(64) uint16_t ab[16][16 * 32];
    alignas(64) float c[16 * 16];
    for (auto& tile : ab)
      for (uint16_t& x : tile) x = 0x3a83;  // bf16 1e-3
    load_full_tile_config();
    _tile_loadd(4, ab[0], 64);
    _tile_loadd(5, ab[1], 64);
    _tile_loadd(6, ab[2], 64);
    _tile_loadd(7, ab[3], 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t it = 0; it < n; ++it) {
      if constexpr (kLoaded) {
        const int64_t s = 4 * (it & 3);
        _tile_loadd(4, ab[s], 64);
        _tile_loadd(6, ab[s + 1], 64);
        _tile_loadd(7, ab[s + 2], 64);
        _tile_loadd(5, ab[s + 3], 64);
      }
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

}  // namespace

double peak_bf16_amx_gflops(double seconds) { return amx_rate<false>(seconds); }
double peak_bf16_amx_loaded_gflops(double seconds) { return amx_rate<true>(seconds); }

}  // namespace nt::cpu
