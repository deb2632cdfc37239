// SPDX-License-Identifier: MIT
// A one-line progress bar with throughput on stderr, for long work (data preparation, tokenizer
// training). Shown only when stderr is a terminal and the work has run for more than half a
// second; redrawn at most 5 times a second. Thread-safe update() (one thread draws).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace nt {

class ProgressLine {
 public:
  // unit: "MB" (total and done in bytes, shown /1e6) or "" (plain counts).
  ProgressLine(std::string label, uint64_t total, std::string unit = "MB", bool enabled = true);
  ~ProgressLine();
  void add(uint64_t n);   // done += n, redraw if due
  void finish();          // final redraw and newline (if anything was drawn)

 private:
  void draw(bool final);
  std::string label_, unit_;
  uint64_t total_;
  std::atomic<uint64_t> done_{0};
  std::atomic<int64_t> last_draw_ns_{0};
  std::atomic<bool> drawing_{false};
  bool enabled_, drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace nt
