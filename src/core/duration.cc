// SPDX-License-Identifier: MIT
#include "core/duration.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nt {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads NUMBER at text[i] (digits, optionally "." and digits); nullopt if there is none.
std::optional<double> read_number(const std::string& text, size_t& i) {
  const size_t start = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  const size_t whole = i - start;
  size_t frac = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && is_digit(text[i])) ++i, ++frac;
    if (frac == 0) return std::nullopt;  // "5.m"
  }
  if (whole == 0 && frac == 0) return std::nullopt;
  if (i - start > 20) return std::nullopt;  // far past any bounded duration
  return std::strtod(text.substr(start, i - start).c_str(), nullptr);
}

}  // namespace

std::optional<double> parse_duration(const std::string& text) {
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const auto v = read_number(text, i);
    if (!v) return std::nullopt;
    std::string unit;
    while (i < text.size() && unit.size() < 4 && text[i] >= 'a' && text[i] <= 'z') unit += text[i++];
    double mul;
    if (unit.empty()) {
      if (i != text.size() || total != 0) return std::nullopt;  // a plain number stands alone
      mul = 1;
    } else if (unit == "s") {
      mul = 1;
    } else if (unit == "ms") {
      mul = 1e-3;
    } else if (unit == "m" || unit == "min") {
      mul = 60;
    } else if (unit == "h") {
      mul = 3600;
    } else {
      return std::nullopt;
    }
    total += *v * mul;
    if (total > kMaxDurationSeconds) return std::nullopt;
  }
  if (!(total > 0)) return std::nullopt;
  return total;
}

std::string format_duration(double s) {
  char buf[64];
  if (!(s < 3600.0 * 1e6)) std::snprintf(buf, sizeof buf, "%.3gh", s / 3600);  // int() would overflow
  else if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(std::fmod(s, 60)));
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(std::fmod(s, 3600) / 60));
  return buf;
}

}  // namespace nt
