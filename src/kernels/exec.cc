// SPDX-License-Identifier: MIT
// ExecContext's workspace: 64-byte aligned buffers that only grow.
#include "kernels/exec.h"

#include <cstdlib>
#include <new>

#include "core/check.h"

namespace nt {

namespace {
// 64-byte aligned: an AMX tile load whose 64-byte rows straddle cache lines is several times
// slower.
constexpr std::align_val_t kAlign{64};
}  // namespace

Workspace::Workspace(int threads) : threads_(threads), bufs_(new Buf[size_t(threads) * kSlots]) {
  NT_CHECK(threads >= 1, "workspace for %d threads", threads);
}

Workspace::~Workspace() {
  for (size_t i = 0; i < size_t(threads_) * kSlots; ++i)
    if (bufs_[i].data) ::operator delete(bufs_[i].data, kAlign);
}

size_t Workspace::bytes() const {
  size_t total = 0;
  for (size_t i = 0; i < size_t(threads_) * kSlots; ++i) total += bufs_[i].bytes;
  return total;
}

void* Workspace::grow(Buf& b, size_t bytes) {
  if (b.data) ::operator delete(b.data, kAlign);
  b.data = ::operator new(bytes, kAlign);
  b.bytes = bytes;
  return b.data;
}

void Workspace::out_of_range(int thread, int slot) const {
  NT_CHECK(false, "workspace slot %d of thread %d: the workspace has %d threads and %d slots", slot, thread,
           threads_, kSlots);
  std::abort();
}

ExecContext::ExecContext(int threads, void* stream)
    : threads_(threads), stream_(stream), workspace_(std::make_unique<Workspace>(threads)) {}

}  // namespace nt
