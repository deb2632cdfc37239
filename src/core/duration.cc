// SPDX-License-Identifier: MIT
#include "core/duration.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace nt {

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    const char* start = text.c_str() + i;
    if (!std::isdigit(static_cast<unsigned char>(*start)) && *start != '.') return std::nullopt;
    char* end = nullptr;
    double v = std::strtod(start, &end);
    if (end == start || !std::isfinite(v) || v < 0) return std::nullopt;
    i = size_t(end - text.c_str());
    std::string unit;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
    double mul;
    if (unit.empty() || unit == "s") mul = 1;
    else if (unit == "ms") mul = 1e-3;
    else if (unit == "m" || unit == "min") mul = 60;
    else if (unit == "h") mul = 3600;
    else return std::nullopt;
    if (unit.empty() && i < text.size()) return std::nullopt;
    total += v * mul;
    any = true;
  }
  if (!any || !(total > 0) || !std::isfinite(total)) return std::nullopt;
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
