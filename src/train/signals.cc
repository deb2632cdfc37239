// SPDX-License-Identifier: MIT
#include "train/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace nt {

namespace {
std::atomic<int> g_requested{0};
std::atomic<bool> g_listening{false};
struct sigaction g_old_int, g_old_term;

// The first signal asks for a clean stop; a second leaves at once. Async-signal-safe.
void request_stop(int sig) {
  if (g_requested.load() != 0) _exit(128 + sig);
  g_requested.store(sig);
  static const char msg[] = "\nnanotrain: stopping after this step (signal again to exit at once)\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

void on_signal(int sig) { request_stop(sig); }

sigset_t stop_set() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

// The one thread that takes SIGINT / SIGTERM. Outside training they keep their default action.
void wait_for_stop_signals() {
  const sigset_t set = stop_set();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (g_listening.load()) {
      request_stop(sig);
      continue;
    }
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    signal(sig, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);  // the default action: the process ends, killed by the signal
    _exit(128 + sig);
  }
}
}  // namespace

void route_stop_signals_to_one_thread() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(wait_for_stop_signals).detach();
}

StopSignals::StopSignals() {
  g_requested.store(0);
  g_listening.store(true);
  // For threads that were started before the routing (or without it): the same stop, taken on
  // whichever thread the signal lands.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignals::~StopSignals() {
  g_listening.store(false);
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int StopSignals::requested() { return g_requested.load(); }

}  // namespace nt
