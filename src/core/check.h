// SPDX-License-Identifier: MIT
// Invariant checks (programmer errors) and user-facing errors.
//
// Two kinds of failure, kept apart on purpose:
//  * NT_CHECK: a broken invariant inside the program. Always on; prints file:line and aborts.
//  * nt::Error: a recoverable, user-caused failure (bad flag, missing or corrupt file). Library
//    code throws it with a one-line message naming the file or flag; only cli/main.cc catches it
//    and turns it into a message on stderr and a non-zero exit. Kernels never throw.
#pragma once
#include <cstdarg>
#include <stdexcept>
#include <string>

namespace nt {

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

// printf-style formatting into a std::string.
std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws nt::Error with a printf-style message.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace nt

#define NT_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond)) ::nt::check_failed(__FILE__, __LINE__, #cond, __VA_ARGS__);   \
  } while (0)

#ifdef NDEBUG
#define NT_DCHECK(cond, ...) \
  do {                       \
  } while (0)
#else
#define NT_DCHECK(cond, ...) NT_CHECK(cond, __VA_ARGS__)
#endif
