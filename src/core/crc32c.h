// SPDX-License-Identifier: MIT
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord files
// (TensorBoard's event files, docs/FORMATS.md). Table-driven, one byte at a time: event records
// are small, so speed does not matter here.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nt {

// The CRC of n bytes, continuing from `crc` (0 to start): crc32c(b, n) == crc32c(b + k, n - k, crc32c(b, k)).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

// TFRecord's masked form of a CRC (rotated right by 15 and offset), which keeps a CRC of data that
// itself holds CRCs from being trivially related to it.
inline uint32_t crc32c_masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace nt
