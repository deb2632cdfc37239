// SPDX-License-Identifier: MIT
// CRC-32C against the published check values (RFC 3720's iSCSI vectors) and against a bit-by-bit
// reference written from the definition, on every length up to 300 and at every split point.
#include "core/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nt {
namespace {

// The definition: reflected polynomial 0x82F63B78, register inverted before and after.
uint32_t crc32c_bitwise(const uint8_t* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0u);
  }
  return ~crc;
}

TEST(Crc32c, PublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) up[i] = uint8_t(i), down[i] = uint8_t(31 - i);
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down.data(), 32), 0x113FDB5Cu);
}

TEST(Crc32c, MatchesTheBitwiseReferenceAndContinues) {
  std::vector<uint8_t> b(300);
  uint32_t x = 12345;
  for (auto& v : b) v = uint8_t((x = x * 1103515245u + 12345u) >> 24);
  for (size_t n = 0; n <= b.size(); ++n) ASSERT_EQ(crc32c(b.data(), n), crc32c_bitwise(b.data(), n)) << n;
  for (size_t k = 0; k <= b.size(); k += 7)
    ASSERT_EQ(crc32c(b.data() + k, b.size() - k, crc32c(b.data(), k)), crc32c(b.data(), b.size())) << k;
}

TEST(Crc32c, MaskIsTheTFRecordRotationAndOffset) {
  EXPECT_EQ(crc32c_masked(0), 0xA282EAD8u);
  EXPECT_EQ(crc32c_masked(0x00008000u), 0xA282EAD9u);   // bit 15 rotates to bit 0
  EXPECT_EQ(crc32c_masked(1), 0xA282EAD8u + 0x20000u);  // bit 0 rotates to bit 17
}

}  // namespace
}  // namespace nt
