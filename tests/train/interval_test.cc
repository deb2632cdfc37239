// SPDX-License-Identifier: MIT
// How often something happens during training (--eval-every, --save-every, --core-every): "0",
// a step count or a training-time duration, and when each is due.
#include "train/interval.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace nt {
namespace {

TEST(Interval, ParsesZeroStepsAndDurations) {
  const Interval none = parse_interval("--core-every", "0");
  EXPECT_EQ(none.steps, 0);
  EXPECT_EQ(none.seconds, 0);
  const Interval steps = parse_interval("--core-every", "25");
  EXPECT_EQ(steps.steps, 25);
  EXPECT_EQ(steps.seconds, 0);
  const Interval minutes = parse_interval("--core-every", "10m");
  EXPECT_EQ(minutes.steps, 0);
  EXPECT_EQ(minutes.seconds, 600);
  EXPECT_EQ(parse_interval("--core-every", "90s").seconds, 90);
}

TEST(Interval, BadValuesNameTheFlag) {
  for (const char* bad : {"", "often", "5x", "-3", "99999999999999999999999"}) {
    const std::string err = test::error_of([&] { (void)parse_interval("--core-every", bad); });
    EXPECT_EQ(err.rfind(std::string("--core-every ") + bad + ":", 0), 0u) << bad << " -> " << err;
  }
}

TEST(Interval, DueOnStepMultiplesOrAfterTheDuration) {
  const Interval none = parse_interval("--core-every", "0");
  for (int64_t s = 0; s < 20; ++s) EXPECT_FALSE(none.due(s, 1e6, 0));
  const Interval every5 = parse_interval("--core-every", "5");
  EXPECT_FALSE(every5.due(0, 0, 0));  // never before the first step
  EXPECT_FALSE(every5.due(4, 0, 0));
  EXPECT_TRUE(every5.due(5, 0, 0));
  EXPECT_FALSE(every5.due(6, 0, 0));
  EXPECT_TRUE(every5.due(10, 0, 0));
  const Interval minute = parse_interval("--core-every", "1m");
  EXPECT_FALSE(minute.due(3, 59.9, 0));
  EXPECT_TRUE(minute.due(3, 60, 0));
  EXPECT_FALSE(minute.due(4, 100, 60));  // measured from the last time it happened
  EXPECT_TRUE(minute.due(5, 120.5, 60));
}

}  // namespace
}  // namespace nt
