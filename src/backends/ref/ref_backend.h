// SPDX-License-Identifier: MIT
// The reference backend as a Backend (kernels/backend.h): plain loops on one thread, fp32.
#pragma once
#include "kernels/backend.h"

namespace nt {

// The plain reference: single thread, naive loops, the executable spec.
const KernelTable& ref_kernels();

namespace ref {

// Its peak is the host CPU's: the registry passes that backend's measurement in.
const Backend& ref_backend(decltype(Backend::measure_peak) host_peak);

}  // namespace ref
}  // namespace nt
