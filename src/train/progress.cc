// SPDX-License-Identifier: MIT
#include "train/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace nt {

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TrainProgress::TrainProgress(bool quiet) : tty_(isatty(STDERR_FILENO)), quiet_(quiet) {}

void TrainProgress::update(const std::string& text, bool force) {
  if (quiet_) return;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
    open_ = true;
    return;
  }
  const double t = now_s();
  if (!force && t - last_log_ < 10.0) return;
  last_log_ = t;
  std::fprintf(stderr, "%s\n", text.c_str());
}

void TrainProgress::finish() {
  if (open_) std::fprintf(stderr, "\n");
  open_ = false;
}

void TrainProgress::print(const std::string& text) {
  finish();
  if (!quiet_) std::fprintf(stderr, "%s\n", text.c_str());
}

}  // namespace nt
