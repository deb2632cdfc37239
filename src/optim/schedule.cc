// SPDX-License-Identifier: MIT
#include "optim/schedule.h"

#include <algorithm>
#include <cmath>

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

double Schedule::warmdown_done(double progress) const {
  const double p = std::clamp(progress, 0.0, 1.0);
  if (warmdown_frac <= 0 || p <= 1.0 - warmdown_frac) return 0.0;
  return std::min(1.0, (p - (1.0 - warmdown_frac)) / warmdown_frac);
}

int64_t Schedule::micro_batches(double progress, int64_t full) const {
  const double p = std::clamp(progress, 0.0, 1.0);
  const double ramp = batch_ramp_frac > 0 ? std::min(1.0, p / batch_ramp_frac) : 1.0;
  const double frac = batch_start_frac + (1.0 - batch_start_frac) * ramp;
  return std::clamp(int64_t(std::llround(frac * double(full))), int64_t(1), full);
}

void Schedule::validate() const {
  validate_fields(*this);
  if (!(batch_start_frac > 0)) fail("--batch-start-frac %g: must be in (0, 1]", batch_start_frac);
  if (warmup_frac + warmdown_frac > 1) fail("--warmup-frac + --warmdown-frac must not exceed 1");
}

}  // namespace nt
