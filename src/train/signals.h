// SPDX-License-Identifier: MIT
// Clean stops: the first SIGINT / SIGTERM asks the training loop to finish its step, write a
// checkpoint and exit; a second one exits at once (any checkpoint being written stays a
// temporary file, so the previous one is intact).
#pragma once

namespace nt {

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
