// SPDX-License-Identifier: MIT
// AMX tile configuration shared by the AMX kernels (included only by *_amx.cc translation units,
// which are built with -mamx-tile -mamx-bf16 and called only when cpu_features().amx_bf16).
//
// Every kernel here uses one shape for all eight tile registers: 16 rows of 64 bytes (16 fp32
// accumulators, 32 bf16 of A, or 16 packed bf16 pairs of B). The configuration is per thread and
// oneDNN's AMX kernels load their own, so each kernel loads ours on entry (ldtilecfg is cheap
// next to the thousands of cycles of one call's tile products).
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

}  // namespace nt::cpu
