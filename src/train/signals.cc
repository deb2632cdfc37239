// SPDX-License-Identifier: MIT
#include "train/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace nt {

namespace {
std::atomic<int> g_requested{0};
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
  if (g_requested.load() != 0) _exit(128 + sig);  // second signal: leave at once
  g_requested.store(sig);
  static const char msg[] = "\nnanotrain: stopping after this step (signal again to exit at once)\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}
}  // namespace

StopSignals::StopSignals() {
  g_requested.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopSignals::requested() { return g_requested.load(); }

}  // namespace nt
