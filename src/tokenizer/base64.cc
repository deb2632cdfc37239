// SPDX-License-Identifier: MIT
#include "tokenizer/base64.h"

#include <array>
#include <cstdint>

namespace nt {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_reverse() {
  std::array<int8_t, 256> r{};
  for (auto& v : r) v = -1;
  for (int i = 0; i < 64; ++i) r[uint8_t(kAlphabet[i])] = int8_t(i);
  return r;
}
constexpr std::array<int8_t, 256> kReverse = make_reverse();
}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t v = uint32_t(p[i]) << 16;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    const uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  if (text.back() == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    const bool last = i + 4 == text.size();
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      int d;
      if (c == '=') {
        if (!last || k < 4 - pad) return std::nullopt;
        d = 0;
      } else {
        d = kReverse[uint8_t(c)];
        if (d < 0) return std::nullopt;
      }
      v = v << 6 | uint32_t(d);
    }
    out += char(v >> 16);
    if (!(last && pad == 2)) out += char((v >> 8) & 255);
    if (!(last && pad >= 1)) out += char(v & 255);
  }
  return out;
}

}  // namespace nt
