// SPDX-License-Identifier: MIT
// Clean stops: the first SIGINT / SIGTERM asks the training loop to finish its step, write a
// checkpoint and exit; a second one exits at once (any checkpoint being written stays a
// temporary file, so the previous one is intact).
#pragma once

namespace nt {

// Blocks SIGINT and SIGTERM in the calling thread (and so in every thread it starts later) and
// takes them on one thread of their own. Called first in main(), before any other thread exists:
// a signal handler run on a compute thread can land inside oneDNN's JIT code, whose data below
// the stack pointer the signal's frame overwrites (a heap corruption on a Ctrl-C, 1 in 8 fp32 runs).
void route_stop_signals_to_one_thread();

class StopSignals {
 public:
  StopSignals();   // installs the handlers
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // 0, or the signal number that asked to stop.
  static int requested();
};

}  // namespace nt
