// SPDX-License-Identifier: MIT
// A 64-byte-aligned, zero-initialised buffer (2 MiB-aligned, on transparent huge pages where the
// kernel grants them, from 4 MiB up); the unit of every arena in the engine.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <sys/mman.h>

namespace nt {

template <class T>
class Buffer {
 public:
  static constexpr size_t kHugePage = size_t(2) << 20;  // x86-64's transparent huge page
  static constexpr size_t kHugeFrom = size_t(4) << 20;  // buffers this large go on huge pages

  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  ~Buffer() { std::free(p_); }
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void resize(size_t n) {
    std::free(p_);
    p_ = nullptr;
    n_ = n;
    if (n == 0) return;
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    size_t align = 64;
    if (bytes >= kHugeFrom) align = kHugePage, bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p_ = static_cast<T*>(std::aligned_alloc(align, bytes));
    if (!p_) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    // Where transparent huge pages are opt-in (`madvise`, Debian's default), ask for them: the
    // kernels read rows far apart (a head's rows, a GEMM's tiles), and on 4 KiB pages every
    // other row is a TLB miss. Only a hint: without huge pages the buffer works the same.
    if (align == kHugePage) (void)madvise(p_, bytes, MADV_HUGEPAGE);
#endif
    std::memset(static_cast<void*>(p_), 0, bytes);
  }
  void zero() {
    if (p_) std::memset(static_cast<void*>(p_), 0, n_ * sizeof(T));
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace nt
