// SPDX-License-Identifier: MIT
#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace nt {

static std::string vstrf(const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap2);
  va_end(ap2);
  std::string s(n > 0 ? size_t(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap);
  return s;
}

std::string strf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vstrf(fmt, ap);
  va_end(ap);
  return s;
}

void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vstrf(fmt, ap);
  va_end(ap);
  throw Error(s);
}

void check_failed(const char* file, int line, const char* cond, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vstrf(fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "nanotrain: internal error at %s:%d: check (%s) failed: %s\n", file, line,
               cond, s.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace nt
