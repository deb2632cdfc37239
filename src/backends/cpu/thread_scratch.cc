// SPDX-License-Identifier: MIT
// Per-thread scratch buffers (cpu_ops.h's thread_scratch), in a portable unit so that the
// AVX-512 units using them instantiate no standard-library code.
#include <vector>

#include "backends/cpu/cpu_ops.h"

namespace nt::cpu {

void* thread_scratch(int slot, size_t bytes) {
  static thread_local std::vector<uint32_t> buffers[kScratchSlots];
  std::vector<uint32_t>& b = buffers[slot];
  if (b.size() * sizeof(uint32_t) < bytes) b.resize((bytes + sizeof(uint32_t) - 1) / sizeof(uint32_t));
  return b.data();
}

}  // namespace nt::cpu
