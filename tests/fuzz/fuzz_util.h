// SPDX-License-Identifier: MIT
// Shared helpers for the libFuzzer targets. A target may reject input only by throwing
// nt::Error (a user error, reported on one line); anything else -- a crash, an NT_CHECK abort,
// a sanitizer report, a hang -- is a bug the fuzzer reports.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/check.h"

namespace nt::fuzz {

inline std::string as_string(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs f; nt::Error is the expected way to reject input.
template <class F>
void expect_ok_or_error(F&& f) {
  try {
    f();
  } catch (const nt::Error& e) {
    // NT_FUZZ_VERBOSE=1 shows why inputs are rejected (to check that seeds get deep).
    static const bool verbose = std::getenv("NT_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
  }
}

// An invariant the target checks about the parser's output.
#define NT_FUZZ_ASSERT(cond)                                                        \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "fuzz assertion failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

}  // namespace nt::fuzz
