// SPDX-License-Identifier: MIT
// Durations given as flags (--time-budget, --eval-every, ...): core/duration.h.
#include <cmath>

#include "core/duration.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = nt::fuzz::as_string(data, size);
  const auto d = nt::parse_duration(in);
  if (d) {
    NT_FUZZ_ASSERT(std::isfinite(*d) && *d > 0);
    (void)nt::format_duration(*d);
  }
  return 0;
}
