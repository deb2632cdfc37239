// SPDX-License-Identifier: MIT
// ExecContext's workspace: 64-byte aligned buffers that only grow.
#include "kernels/exec.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "core/check.h"

namespace nt {

namespace {
// 64-byte aligned: an AMX tile load whose 64-byte rows straddle cache lines is several times
// slower.
constexpr std::align_val_t kAlign{64};
void* host_allocate(size_t bytes) { return ::operator new(bytes, kAlign); }
void host_release(void* p) { ::operator delete(p, kAlign); }
}  // namespace

const WorkspaceMemory& host_memory() {
  static const WorkspaceMemory m{host_allocate, host_release};
  return m;
}

Workspace::Workspace(int threads, const WorkspaceMemory& memory)
    : threads_(threads), memory_(&memory), bufs_(new Buf[size_t(std::max(threads, 1)) * kSlots]) {
  NT_CHECK(threads >= 1, "workspace for %d threads", threads);
}

Workspace::~Workspace() {
  for (size_t i = 0; i < size_t(threads_) * kSlots; ++i)
    if (bufs_[i].data) memory_->release(bufs_[i].data);
}

size_t Workspace::bytes() const {
  size_t total = 0;
  for (size_t i = 0; i < size_t(threads_) * kSlots; ++i) total += bufs_[i].bytes;
  return total;
}

void* Workspace::grow(Buf& b, size_t bytes) {
  if (b.data) memory_->release(b.data);
  b.data = nullptr, b.bytes = 0;
  b.data = memory_->allocate(bytes);
  b.bytes = bytes;
  return b.data;
}

void Workspace::out_of_range(int thread, int slot) const {
  NT_CHECK(false, "workspace slot %d of thread %d: the workspace has %d threads and %d slots", slot, thread, threads_,
           kSlots);
  std::abort();
}

ExecContext::ExecContext(int threads, void* stream, const WorkspaceMemory& memory)
    : threads_(threads), stream_(stream), workspace_(std::make_unique<Workspace>(threads, memory)) {}

}  // namespace nt
