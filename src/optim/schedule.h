// SPDX-License-Identifier: MIT
// The learning-rate multiplier as a pure function of progress in [0, 1] (training time used /
// budget, or step / steps): linear warm-up over warmup_frac, constant, then linear warm-down
// over the last warmdown_frac to final_lr_frac.
#pragma once
#include "core/fields.h"

namespace nt {

struct Schedule {
  double warmup_frac = 0.0;
  double warmdown_frac = 0.5;
  double final_lr_frac = 0.0;
  double multiplier(double progress) const;
  // The fraction of the warm-down done at `progress`: 0 before it, 1 at its end.
  double warmdown_done(double progress) const;
  void validate() const;  // errors name the flag

  template <class V>
  void for_each_field(V&& v) {
    constexpr const char* kFrac = "must be in [0, 1]";
    v(warmup_frac, {.key = "warmup_frac", .flag = "--warmup-frac", .help = "LR warm-up, fraction of the budget",
                    .show_default = true, .min = 0, .max = 1, .error = kFrac});
    v(warmdown_frac, {.key = "warmdown_frac", .flag = "--warmdown-frac",
                      .help = "LR linear warm-down, fraction of the budget", .show_default = true, .min = 0,
                      .max = 1, .error = kFrac});
    v(final_lr_frac, {.key = "final_lr_frac", .flag = "--final-lr-frac",
                      .help = "LR multiplier at the end of warm-down", .show_default = true, .min = 0, .max = 1,
                      .error = kFrac});
  }
};

}  // namespace nt
