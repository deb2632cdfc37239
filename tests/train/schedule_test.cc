// SPDX-License-Identifier: MIT
// The learning-rate schedule's values, worked out by hand: linear warm-up from 0, a flat middle,
// and a linear warm-down to final_lr_frac over the last warmdown_frac of the budget.
#include <gtest/gtest.h>

#include "optim/schedule.h"

namespace nt {
namespace {

TEST(Schedule, WarmDownIsLinearToTheFinalFraction) {
  Schedule s;  // warm-down over the last half, to 0
  EXPECT_DOUBLE_EQ(s.multiplier(0.0), 1.0);
  EXPECT_DOUBLE_EQ(s.multiplier(0.5), 1.0);
  EXPECT_DOUBLE_EQ(s.multiplier(0.75), 0.5);
  EXPECT_DOUBLE_EQ(s.multiplier(0.9), 0.2);
  EXPECT_DOUBLE_EQ(s.multiplier(1.0), 0.0);
  EXPECT_DOUBLE_EQ(s.multiplier(2.0), 0.0);  // progress is clamped
  s.final_lr_frac = 0.1;
  s.warmdown_frac = 0.2;
  EXPECT_DOUBLE_EQ(s.multiplier(0.79), 1.0);
  EXPECT_NEAR(s.multiplier(0.9), 0.1 + 0.9 * 0.5, 1e-12);
  EXPECT_NEAR(s.warmdown_done(0.9), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(s.warmdown_done(0.5), 0.0);
}

TEST(Schedule, WarmUpIsLinearFromZero) {
  Schedule s;
  s.warmup_frac = 0.1;
  EXPECT_NEAR(s.multiplier(0.0), 0.0, 1e-9);
  EXPECT_NEAR(s.multiplier(0.05), 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(s.multiplier(0.1), 1.0);
  EXPECT_DOUBLE_EQ(s.multiplier(0.3), 1.0);
}

}  // namespace
}  // namespace nt
