// SPDX-License-Identifier: MIT
// The CPU backend's mirror of an upper triangle (composed/upper_triangle.h has the portable one):
// the same result, through 8 x 8 register transposes, because the mirrors of Newton-Schulz's
// products are a visible share of a one-thread iteration.
#pragma once
#include <cstdint>

#include "composed/upper_triangle.h"
#include "kernels/exec.h"

namespace nt::cpu {

// Copies the strict upper triangle of the (m, m) row-major c below the diagonal (exactly).
void mirror_upper_triangle(const ExecContext& ctx, float* c, int64_t m);

}  // namespace nt::cpu
