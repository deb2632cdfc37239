// SPDX-License-Identifier: MIT
// Per-thread scratch buffers (cpu_ops.h's thread_scratch), in a portable unit so that the
// AVX-512 units using them instantiate no standard-library code.
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_ops.h"

namespace nt::cpu {

// 64-byte aligned: an AMX tile load whose 64-byte rows straddle cache lines is several times
// slower.
void* thread_scratch(int slot, size_t bytes) {
  static thread_local std::vector<uint32_t> buffers[kScratchSlots];
  std::vector<uint32_t>& b = buffers[slot];
  const size_t words = (bytes + 64 + sizeof(uint32_t) - 1) / sizeof(uint32_t);
  if (b.size() < words) b.resize(words);
  return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(b.data()) + 63) / 64 * 64);
}

}  // namespace nt::cpu
