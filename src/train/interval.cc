// SPDX-License-Identifier: MIT
#include "train/interval.h"

#include <charconv>

#include "core/check.h"
#include "core/duration.h"

namespace nt {

Interval parse_interval(const char* flag, const std::string& s) {
  Interval e;
  if (s == "0") return e;
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), e.steps);
    if (ec != std::errc() || e.steps <= 0) fail("%s %s: step count out of range", flag, s.c_str());
    return e;
  }
  auto d = parse_duration(s);
  if (!d) fail("%s %s: expected 0, a step count, or a duration such as 60s", flag, s.c_str());
  e.seconds = *d;
  return e;
}

}  // namespace nt
