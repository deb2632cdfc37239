// SPDX-License-Identifier: MIT
// The roofline model of this machine: a kernel doing F FLOPs over B bytes of compulsory traffic
// (every operand read once, every result written once) has arithmetic intensity I = F / B, and
// can run no faster than min(compute peak, I x memory bandwidth). `place` says which of the two
// roofs bounds a measured kernel and how close it runs to it; `roofline_svg` draws the roofs
// and every kernel on log-log axes (nanotrain bench --roofline).
#pragma once
#include <string>
#include <vector>

namespace nt::profile {

// The machine's roofs, as bench measures them.
struct Roofs {
  double fp32_gflops;  // FMA peak
  double bf16_gflops;  // bf16 dot-product peak (the fp32 one where the CPU has none)
  double gbs;          // memory bandwidth (STREAM triad)
};

// One kernel's measured call.
struct KernelRate {
  std::string name;
  double seconds;      // per call
  double flops;        // arithmetic per call (0: it only moves data)
  double bytes;        // compulsory traffic per call
  double peak_gflops;  // its compute roof: the fp32 or bf16 peak (or a mix of both)
  bool bf16;           // drawn against the bf16 roof
};

struct RoofPlacement {
  double intensity = 0;    // FLOP per byte (0 for data movement)
  double gflops = 0;       // achieved
  double gbs = 0;          // achieved
  double roof_gflops = 0;  // the lower roof at this intensity (0 for data movement)
  bool memory_bound = true;
  double pct_roof = 0;     // achieved / roof, in % (for data movement: GB/s against the bandwidth)
};

// Needs positive roofs, seconds and bytes, and flops >= 0.
RoofPlacement place(const Roofs& roofs, const KernelRate& k);

// The chart: the roofs, one numbered point per kernel that does arithmetic (data movement has no
// place on the FLOP axis and is listed under the legend instead), and a legend with each
// kernel's share of its roof. subtitle: a line under the title (the machine, the shapes).
std::string roofline_svg(const Roofs& roofs, const std::vector<KernelRate>& kernels, const std::string& title,
                         const std::string& subtitle);

}  // namespace nt::profile
