// SPDX-License-Identifier: MIT
// The profiler: RAII zones over a fixed set of names, per-thread accumulation, a summary table
// and a Chrome trace-event JSON (opens in Perfetto / chrome://tracing, one track per thread).
//
//   nt::profile::enable(true);                 // once, before the first step
//   { nt::profile::Zone z(nt::profile::kStep); ... }
//   std::string table = nt::profile::report(flops_per_step, peak_gflops, "bf16 960 GF/s");
//   nt::profile::write_trace("run/trace.json");
//
// A zone costs one predictable branch when profiling is off. Zones nest; the innermost
// enclosing phase zone (forward, backward, optimizer, data, eval) names the phase of the op
// zones inside it, so the table splits each op kind by phase ("backward / attention").
//
// Op zones are opened by the thread that drives the step. Inside a kernel's parallel region each
// OpenMP thread opens a WorkZone, so the trace shows every thread's share of that kernel, and the
// gaps where a thread waits. oneDNN's GEMMs run on the same threads but are not instrumented:
// on the worker tracks they are the stretches covered only by the main track's GEMM zones.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nt::profile {

enum Id : uint8_t {
  // Phases (and the step around them).
  kStep, kForward, kBackward, kOptimizer, kData, kEval, kCheckpoint,
  // Op kinds.
  kEmbed, kNorm, kRope, kQkv, kAttention, kAttnOut, kMlpUp, kRelu2, kMlpDown, kHead, kLoss, kToBf16,
  kZeroGrad, kMuon, kNewtonSchulz, kAdamW, kOther,
  kCount
};
const char* name(Id id);

namespace detail {
extern bool g_enabled;
void begin(Id id);
void end(Id id);
}  // namespace detail

inline bool enabled() { return detail::g_enabled; }
// Turns zones on or off; call while no zone is open (e.g. before the first step).
void enable(bool on);
// Drops everything recorded so far.
void reset();

class Zone {
 public:
  explicit Zone(Id id) : id_(id), on_(detail::g_enabled) {
    if (on_) detail::begin(id);
  }
  ~Zone() {
    if (on_) detail::end(id_);
  }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

 private:
  Id id_;
  bool on_;
};

// A trace slice on the calling thread's track, for the body of a parallel region (every thread
// of the region opens one; its work-sharing loop takes `nowait`, so that the slice ends when the
// thread's share does and the region's closing barrier shows as the gap before the next op).
// label must be a string literal. Work zones are not in the table: the op zone around the
// kernel call already counts its time once. Out of line on purpose: kernels compiled for
// AVX-512 open them too, and an inline copy built there could be the one the linker keeps for
// everyone (a parallel region costs microseconds; one call more is nothing).
class WorkZone {
 public:
  explicit WorkZone(const char* label);
  ~WorkZone();
  WorkZone(const WorkZone&) = delete;
  WorkZone& operator=(const WorkZone&) = delete;

 private:
  const char* label_;
  int64_t begin_ns_ = 0;
  bool on_;
};

// What the zones recorded: a row per (phase, zone) that ran, in the table's order (each phase's
// own row, then its ops by time; then ops outside any phase, whose phase is kStep).
struct ZoneTotal {
  Id phase, id;
  double ms;
  int64_t calls;
};
struct Totals {
  int64_t steps = 0;      // step zones closed
  double step_ms = 0;     // their total time
  double wall_ms = 0;     // since enable() (or reset())
  int64_t dropped_events = 0;
  std::vector<ZoneTotal> rows;
  // What the shares are of: the steps' time, or the wall time when no step zone was recorded.
  double base_ms() const { return steps > 0 ? step_ms : wall_ms; }
  // The model FLOP rate over the steps, given a step's FLOPs (0 when no step was recorded).
  double step_gflops(double flops_per_step) const {
    return steps > 0 && step_ms > 0 ? flops_per_step * double(steps) / (step_ms * 1e-3) * 1e-9 : 0.0;
  }
};
Totals totals();

// The summary table: per phase and op kind, total ms, calls, share of the step zones' total
// time (or of the wall time between enable() and report() when no step zone was recorded),
// and mean. When flops_per_step > 0 and peak_gflops > 0, adds achieved GFLOP/s and MFU per
// step against that peak, naming it with peak_label.
std::string report(double flops_per_step = 0, double peak_gflops = 0, const std::string& peak_label = "");
// Writes the trace (complete events, "ph":"X", microseconds) atomically. Events beyond the
// first 2 million are dropped (counted in the table). Throws nt::Error if the file fails.
void write_trace(const std::string& path);
// The table as an SVG bar chart (profile_chart.cc): a bar per phase and per op inside it, ms per
// step and share of the step. title and subtitle: what ran (model, dtype, MFU).
std::string chart_svg(const std::string& title, const std::string& subtitle);

}  // namespace nt::profile
