// SPDX-License-Identifier: MIT
// Units 0 .. count - 1 shared out among threads as a static schedule shares them (thread t owns a
// contiguous range and takes it front to back), except that a thread whose range has run out takes
// units one at a time from the back of another's. A unit's result must not depend on the thread
// that runs it. On a shared machine one core can run slower than the other for a while; a static
// split then leaves the faster thread waiting at the end of every product, and a dynamic one
// (units handed out one at a time, in order) gives up the ranges' order, which the GEMMs' reads
// depend on (gemm_rows_avx512.cc says what each cost).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>

namespace nt::cpu {

// Internal linkage, as in simd_avx2.h: a header compiled into AVX2 and AVX-512 translation units
// must not leave the linker one shared copy built with AVX-512.
namespace {

class StealRanges {
 public:
  // For `threads` ranges; a thread numbered past the team's size is simply never an owner (its
  // range is taken by the others).
  StealRanges(int64_t count, int threads) : ranges_(new Range[size_t(threads)]), count_(count), threads_(threads) {
    for (int t = 0; t < threads; ++t)
      ranges_[size_t(t)].front_back.store(pack(first(t), end(t)), std::memory_order_relaxed);
  }

  // Thread t's own range as it was given: first(t) .. end(t) - 1 (empty past the ranges).
  int64_t first(int t) const { return t < threads_ ? count_ * t / threads_ : count_; }
  int64_t end(int t) const { return t < threads_ ? count_ * (t + 1) / threads_ : count_; }

  // The next unit for thread t (its own range first, then the others' backs), or -1: none left.
  int64_t next(int t) {
    if (t < threads_) {
      Range& own = ranges_[size_t(t)];
      uint64_t v = own.front_back.load(std::memory_order_relaxed);
      while (front(v) < back(v))
        if (own.front_back.compare_exchange_weak(v, pack(front(v) + 1, back(v)), std::memory_order_relaxed))
          return front(v);
    }
    for (int i = 1; i <= threads_; ++i) {
      Range& other = ranges_[size_t((t + i) % threads_)];
      uint64_t v = other.front_back.load(std::memory_order_relaxed);
      while (front(v) < back(v))
        if (other.front_back.compare_exchange_weak(v, pack(front(v), back(v) - 1), std::memory_order_relaxed))
          return back(v) - 1;
    }
    return -1;
  }

 private:
  struct alignas(64) Range {  // one line each: the owners' claims do not contend
    std::atomic<uint64_t> front_back{0};
  };
  static uint64_t pack(int64_t front, int64_t back) { return uint64_t(front) << 32 | uint64_t(back); }
  static int64_t front(uint64_t v) { return int64_t(v >> 32); }
  static int64_t back(uint64_t v) { return int64_t(v & 0xffffffffu); }

  std::unique_ptr<Range[]> ranges_;
  int64_t count_;
  int threads_;
};

}  // namespace
}  // namespace nt::cpu
