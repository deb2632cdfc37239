// SPDX-License-Identifier: MIT
// How often something happens during training (--eval-every, --save-every): "0" = only at the
// end, "N" = every N steps, or a duration = every that much training time.
#pragma once
#include <cstdint>
#include <string>

namespace nt {

struct Interval {
  int64_t steps = 0;
  double seconds = 0;
  // Due at `step` (> 0) when `used` training seconds have passed since `last_at`.
  bool due(int64_t step, double used, double last_at) const {
    return step > 0 && ((steps > 0 && step % steps == 0) || (seconds > 0 && used - last_at >= seconds));
  }
};

// Errors name the flag.
Interval parse_interval(const char* flag, const std::string& s);
inline void check_interval(const char* flag, const std::string& s) { (void)parse_interval(flag, s); }

}  // namespace nt
