// SPDX-License-Identifier: MIT
// --threads is bounded: negative or more than 4 per usable core is an error naming the flag.
#include <gtest/gtest.h>
#include <sched.h>

#include "core/check.h"
#include "core/system.h"
#include "test_util.h"

namespace nt {
namespace {

TEST(Threads, CountIsBounded) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const int cores = CPU_COUNT(&allowed);
  EXPECT_NE(test::error_of([] { setup_threads(-1); }).find("--threads -1"), std::string::npos);
  const std::string e = test::error_of([&] { setup_threads(4 * cores + 1); });
  EXPECT_NE(e.find("--threads " + std::to_string(4 * cores + 1) + ": at most " + std::to_string(4 * cores)),
            std::string::npos)
      << e;
  EXPECT_THROW(setup_threads(1000000000), Error);
  EXPECT_EQ(setup_threads(4 * cores), 4 * cores);
  EXPECT_EQ(setup_threads(1), 1);
}

}  // namespace
}  // namespace nt
