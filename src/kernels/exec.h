// SPDX-License-Identifier: MIT
// What an op runs with, handed to it by its caller: how many threads it may use, scratch memory
// the caller owns, and (on a device backend) the stream its work is queued on. Ops read nothing
// ambient, so a caller that runs ops on several of its own threads at once (Muon's workers) gives
// each a context of its own, and a device backend fills the same struct with its stream and
// device scratch.
#pragma once
#include <cstddef>
#include <memory>

namespace nt {

// Where a workspace's buffers come from: host memory (64-byte aligned) unless the backend that
// runs the context's ops passes its own (a device backend's device allocations).
struct WorkspaceMemory {
  void* (*allocate)(size_t bytes);  // 64-byte aligned; never null
  void (*release)(void* p);
};
const WorkspaceMemory& host_memory();

// Scratch for the ops run with one context: for each thread of an op's team, numbered slots,
// each a 64-byte aligned buffer grown to the largest request and kept, so that a warm workspace
// allocates nothing. A backend numbers its own slots (below kSlots). Thread i's buffers are used
// only by thread i of the team, so one workspace serves a whole team without locks; ops running
// at the same time need workspaces of their own.
class Workspace {
 public:
  static constexpr int kSlots = 40;
  explicit Workspace(int threads, const WorkspaceMemory& memory = host_memory());
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  int threads() const { return threads_; }
  // Buffer `slot` of team thread `thread` (below threads()), at least `bytes` long. Its contents
  // are whatever the last user left; growing it does not keep them.
  void* get(int thread, int slot, size_t bytes) {
    if (unsigned(thread) >= unsigned(threads_) || unsigned(slot) >= unsigned(kSlots)) out_of_range(thread, slot);
    Buf& b = bufs_[size_t(thread) * kSlots + size_t(slot)];
    return b.bytes >= bytes ? b.data : grow(b, bytes);
  }
  // Bytes held by all buffers (for tests and memory reports).
  size_t bytes() const;

 private:
  struct Buf {
    void* data = nullptr;
    size_t bytes = 0;
  };
  void* grow(Buf& b, size_t bytes);
  [[noreturn]] void out_of_range(int thread, int slot) const;
  int threads_;
  const WorkspaceMemory* memory_;
  std::unique_ptr<Buf[]> bufs_;
};

// Ops take `const ExecContext&`: they read its thread count and stream and never change them;
// the workspace it owns is scratch they grow through workspace(), so a context serves one op
// at a time (two threads running ops at once need two contexts).
class ExecContext {
 public:
  // threads >= 1; stream: a device backend's queue (a cudaStream_t, say), null on the CPU;
  // memory: where the workspace's buffers come from.
  explicit ExecContext(int threads, void* stream = nullptr, const WorkspaceMemory& memory = host_memory());
  // Not copied or moved: op sets and callers hold references to it.
  ExecContext(const ExecContext&) = delete;
  ExecContext& operator=(const ExecContext&) = delete;

  // The most threads an op may use; the CPU backend sizes its teams and picks thread-dependent
  // routes from it. 1: the op runs on the calling thread only.
  int threads() const { return threads_; }
  // The device backend's stream or queue its ops are issued on; unused by the CPU backends.
  void* stream() const { return stream_; }
  // Scratch for threads() threads (device memory on a device backend).
  Workspace& workspace() const { return *workspace_; }

 private:
  int threads_;
  void* stream_;
  std::unique_ptr<Workspace> workspace_;
};

}  // namespace nt
