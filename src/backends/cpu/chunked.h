// SPDX-License-Identifier: MIT
// Element-wise work in fixed chunks of kChunk elements, spread over the threads when there are
// enough of them to pay for a parallel region.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/exec.h"
#include "profile/profile.h"

namespace nt::cpu {

inline constexpr int64_t kChunk = 8192;

template <class F>
void chunked(const ExecContext& ctx, int64_t n, F body) {
#pragma omp parallel num_threads(ctx.threads()) if (n > 4 * kChunk)
  {
    profile::WorkZone work("elementwise");
#pragma omp for schedule(static) nowait
    for (int64_t c0 = 0; c0 < n; c0 += kChunk) body(c0, std::min(n, c0 + kChunk));
  }
}

}  // namespace nt::cpu
