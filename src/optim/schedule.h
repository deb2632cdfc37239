// SPDX-License-Identifier: MIT
// The schedules, as pure functions of progress in [0, 1] (training time used / budget, or step /
// steps): the learning-rate multiplier (linear warm-up over warmup_frac, constant, then linear
// warm-down over the last warmdown_frac to final_lr_frac) and the batch size (from
// batch_start_frac of the full batch, linear to the full batch over the first batch_ramp_frac).
#pragma once
#include <cstdint>

#include "core/fields.h"

namespace nt {

struct Schedule {
  double warmup_frac = 0.0;
  double warmdown_frac = 0.5;
  double final_lr_frac = 0.0;
  double batch_start_frac = 1.0;  // 1: the full batch throughout
  double batch_ramp_frac = 0.3;
  double multiplier(double progress) const;
  // Micro-batches in the step at `progress`, of `full` in a full batch: at least 1, rounded to
  // the nearest.
  int64_t micro_batches(double progress, int64_t full) const;
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
    v(batch_start_frac, {.key = "batch_start_frac", .flag = "--batch-start-frac",
                         .help = "Batch-size schedule: tokens per step at the start, fraction of the full batch",
                         .show_default = true, .optional = true, .min = 0, .max = 1, .error = "must be in (0, 1]"});
    v(batch_ramp_frac, {.key = "batch_ramp_frac", .flag = "--batch-ramp-frac",
                        .help = "Batch-size schedule: ramp to the full batch over this fraction of the budget",
                        .show_default = true, .optional = true, .min = 0, .max = 1, .error = kFrac});
  }
};

}  // namespace nt
