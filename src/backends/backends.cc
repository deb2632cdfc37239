// SPDX-License-Identifier: MIT
// The backends of this build, by --device name.
#include "backends/cpu/cpu_backend.h"
#include "backends/ref/ref_backend.h"
#include "core/check.h"
#include "kernels/backend.h"

namespace nt {

const Backend& backend_for_device(const std::string& device) {
  const Backend& cpu = cpu::cpu_backend();
  if (device == "cpu") return cpu;
  if (device == "ref") return ref::ref_backend(cpu.measure_peak);
  if (device == "cuda") fail("--device cuda: this build has no CUDA backend (available: cpu, ref)");
  fail("--device %s: unknown device (available: cpu, ref)", device.c_str());
}

}  // namespace nt
