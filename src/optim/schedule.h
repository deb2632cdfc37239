// SPDX-License-Identifier: MIT
// The learning-rate multiplier as a pure function of progress in [0, 1] (training time used /
// budget, or step / steps): linear warm-up over warmup_frac, constant, then linear warm-down
// over the last warmdown_frac to final_lr_frac.
#pragma once

namespace nt {

struct Schedule {
  double warmup_frac = 0.0;
  double warmdown_frac = 0.5;
  double final_lr_frac = 0.0;
  double multiplier(double progress) const;
  void validate() const;  // errors name the flag
};

}  // namespace nt
