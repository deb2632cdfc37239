// SPDX-License-Identifier: MIT
// The CPU backend as a Backend (kernels/backend.h).
#pragma once
#include "kernels/backend.h"

namespace nt {

// The table this CPU runs best (kernels.h contracts).
const KernelTable& cpu_kernels();

namespace cpu {

const Backend& cpu_backend();

}  // namespace cpu
}  // namespace nt
