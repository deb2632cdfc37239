// SPDX-License-Identifier: MIT
#include "optim/schedule.h"

#include <algorithm>

#include "core/check.h"

namespace nt {

double Schedule::multiplier(double progress) const {
  const double p = std::clamp(progress, 0.0, 1.0);
  if (warmup_frac > 0 && p < warmup_frac) return (p + 1e-12) / warmup_frac;
  if (warmdown_frac > 0 && p > 1.0 - warmdown_frac) {
    const double w = (1.0 - p) / warmdown_frac;  // 1 at the start of warm-down, 0 at the end
    return final_lr_frac + (1.0 - final_lr_frac) * w;
  }
  return 1.0;
}

void Schedule::validate() const {
  if (!(warmup_frac >= 0 && warmup_frac <= 1)) fail("--warmup-frac %g: must be in [0, 1]", warmup_frac);
  if (!(warmdown_frac >= 0 && warmdown_frac <= 1)) fail("--warmdown-frac %g: must be in [0, 1]", warmdown_frac);
  if (warmup_frac + warmdown_frac > 1) fail("--warmup-frac + --warmdown-frac must not exceed 1");
  if (!(final_lr_frac >= 0 && final_lr_frac <= 1)) fail("--final-lr-frac %g: must be in [0, 1]", final_lr_frac);
}

}  // namespace nt
