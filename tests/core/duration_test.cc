// SPDX-License-Identifier: MIT
// Durations accept exactly the documented grammar (core/duration.h), bounded in magnitude.
#include <gtest/gtest.h>

#include "core/duration.h"

namespace nt {
namespace {

TEST(Duration, AcceptsTheGrammar) {
  const std::pair<const char*, double> ok[] = {
      {"90s", 90},     {"5m", 300},  {"5min", 300}, {"1.5h", 5400}, {"1h30m", 5400}, {"250ms", 0.25},
      {"300", 300},    {"0.5", 0.5}, {".5s", 0.5},  {"1h0m1s", 3601}, {"1000h", 3600000}, {"007s", 7},
  };
  for (const auto& [text, seconds] : ok) {
    const auto d = parse_duration(text);
    ASSERT_TRUE(d.has_value()) << text;
    EXPECT_DOUBLE_EQ(*d, seconds) << text;
  }
}

TEST(Duration, RefusesEverythingElse) {
  const char* bad[] = {"",      "0",     "0s",    "-5m",     "+5m",    "0x10m",  "0x10",  "1e3m", "1e300s",
                       "1E3",   "inf",   "nan",   "infs",    "10mxyz", "5 m",    " 5m",   "5m ",  "5.m",
                       ".s",    "m",     "5M",    "5sec",    "1h30",   "30 1h",  "5m5",   "1001h", "3600001",
                       "5m-1s", "1,5h",  "5..5s", "5.5.5s",  "99999999999999999999999s", "5\n"};
  for (const char* text : bad) EXPECT_FALSE(parse_duration(text).has_value()) << "'" << text << "'";
}

TEST(Duration, SumsTheParts) {
  EXPECT_DOUBLE_EQ(*parse_duration("1h1m1s1ms"), 3661.001);
  EXPECT_DOUBLE_EQ(*parse_duration("30s30s"), 60);
}

}  // namespace
}  // namespace nt
