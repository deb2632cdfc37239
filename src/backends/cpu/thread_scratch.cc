// SPDX-License-Identifier: MIT
// Per-thread scratch buffers (cpu_ops.h's thread_scratch), in a portable unit so that the
// AVX-512 units using them instantiate no standard-library code.
#include <omp.h>

#include "backends/cpu/cpu_ops.h"

namespace nt::cpu {

void* thread_scratch(const ExecContext& ctx, int slot, size_t bytes) {
  return ctx.workspace().get(ctx.threads() == 1 ? 0 : omp_get_thread_num(), slot, bytes);
}

}  // namespace nt::cpu
