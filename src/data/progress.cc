// SPDX-License-Identifier: MIT
#include "data/progress.h"

#include <unistd.h>

#include <cstdio>

namespace nt {

ProgressLine::ProgressLine(std::string label, uint64_t total, std::string unit, bool enabled)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(enabled && isatty(2)),
      start_(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressLine::add(uint64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (!enabled_) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  if (now < 500'000'000 || now - last_draw_ns_.load(std::memory_order_relaxed) < 200'000'000) return;
  bool expected = false;
  if (!drawing_.compare_exchange_strong(expected, true)) return;
  last_draw_ns_.store(now, std::memory_order_relaxed);
  draw(false);
  drawing_.store(false);
}

void ProgressLine::draw(bool final) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const uint64_t done = done_.load(std::memory_order_relaxed);
  const double frac = total_ ? double(done) / double(total_) : 1.0;
  const int width = 30, fill = int(frac * width + 0.5);
  std::string bar(size_t(fill > width ? width : fill), '#');
  bar.resize(size_t(width), '.');
  const double scale = unit_ == "MB" ? 1e6 : 1.0;
  const double rate = secs > 0 ? double(done) / scale / secs : 0;
  const double eta = frac > 0 && frac < 1 ? secs * (1 - frac) / frac : 0;
  const char* u = unit_.empty() ? "items" : unit_.c_str();
  std::fprintf(stderr, "\r%s [%s] %3.0f%% %.1f/%.1f %s, %.1f %s/s, %s %.0fs ", label_.c_str(), bar.c_str(), frac * 100,
               double(done) / scale, double(total_) / scale, u, rate, u, final ? "took" : "eta", final ? secs : eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (drawn_) {
    draw(true);
    std::fputc('\n', stderr);
    drawn_ = false;
  }
}

}  // namespace nt
