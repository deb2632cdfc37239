// SPDX-License-Identifier: MIT
// The time budget's stop rule and its step predictor: no step starts that the prediction says
// would end past the budget, a step that ends exactly at it is allowed, one slow step does not
// move the prediction, and a checkpoint's restore continues the same decisions.
#include <gtest/gtest.h>

#include "train/time_budget.h"

namespace nt {
namespace {

TEST(TimeBudget, StopsBeforeAStepThatWouldOverrun) {
  TimeBudget b(10.0);
  EXPECT_FALSE(b.next_step_would_overrun());  // nothing known yet: the first step always runs
  for (int i = 0; i < 8; ++i) b.charge(1.0);
  EXPECT_DOUBLE_EQ(b.predicted_step(), 1.0);
  EXPECT_FALSE(b.next_step_would_overrun());  // 8 + 1 <= 10
  b.charge(1.0);
  EXPECT_FALSE(b.next_step_would_overrun());  // 9 + 1 ends exactly at the budget
  b.charge(0.5);
  EXPECT_TRUE(b.next_step_would_overrun());  // 9.5 + 1 > 10
  EXPECT_DOUBLE_EQ(b.progress(), 0.95);
  b.charge(2.0);
  EXPECT_TRUE(b.next_step_would_overrun());
  EXPECT_DOUBLE_EQ(b.progress(), 1.0);  // clamped
}

TEST(TimeBudget, OneSlowStepDoesNotMoveThePrediction) {
  TimeBudget b(100.0);
  for (double s : {1.0, 1.0, 1.0, 1.0, 30.0}) b.charge(s);
  EXPECT_DOUBLE_EQ(b.predicted_step(), 1.0);
  for (double s : {3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0}) b.charge(s);
  EXPECT_DOUBLE_EQ(b.predicted_step(), 3.0);  // a real change is followed
}

TEST(TimeBudget, RestoreContinuesTheSameDecisions) {
  TimeBudget a(20.0);
  for (double s : {2.0, 2.5, 1.5, 2.0}) a.charge(s);
  TimeBudget b(20.0);
  b.restore(a.used(), a.recent());
  for (double s : {2.0, 2.2, 2.1, 1.9, 2.0, 2.3}) {
    EXPECT_EQ(a.next_step_would_overrun(), b.next_step_would_overrun());
    EXPECT_DOUBLE_EQ(a.predicted_step(), b.predicted_step());
    a.charge(s), b.charge(s);
  }
  EXPECT_DOUBLE_EQ(a.used(), b.used());
}

TEST(TimeBudget, StepCountRunsHaveNoBudget) {
  TimeBudget b(0);
  for (int i = 0; i < 100; ++i) b.charge(1e6);
  EXPECT_FALSE(b.next_step_would_overrun());
  EXPECT_EQ(b.progress(), 0.0);
}

}  // namespace
}  // namespace nt
