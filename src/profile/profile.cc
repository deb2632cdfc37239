// SPDX-License-Identifier: MIT
#include "profile/profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/files.h"

namespace nt::profile {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPhases = 7;  // kStep .. kCheckpoint; "phase" index 0 = none (outside any phase)
constexpr size_t kMaxEvents = 2'000'000;

struct Event {
  int64_t begin_ns, dur_ns;
  Id id;
  const char* label;  // a work zone's name (id unused), else nullptr
};

struct ThreadState {
  int tid = 0;
  // Totals by [phase][id]; the phase is the innermost open phase zone (kStep = none).
  int64_t total_ns[kPhases][kCount] = {};
  int64_t calls[kPhases][kCount] = {};
  struct Open {
    Id id;
    int64_t begin_ns;
    int phase;
  };
  std::vector<Open> stack;
  std::vector<Event> events;
  int64_t dropped = 0;
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadState>> threads;
  Clock::time_point t0 = Clock::now();
};

Registry& registry() {
  static Registry r;
  return r;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - registry().t0).count();
}

ThreadState& self() {
  thread_local ThreadState* s = nullptr;
  if (!s) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.threads.push_back(std::make_unique<ThreadState>());
    s = r.threads.back().get();
    s->tid = int(r.threads.size()) - 1;
  }
  return *s;
}

bool is_phase(Id id) { return id >= kForward && id <= kCheckpoint; }

}  // namespace

const char* name(Id id) {
  static const char* const names[kCount] = {
      "step", "forward", "backward", "optimizer", "data", "eval", "checkpoint", "embedding", "rmsnorm",
      "rotary + qk-norm", "qkv gemm", "attention", "attn out gemm", "mlp up gemm", "relu2", "mlp down gemm",
      "head gemm", "softcap xent", "to bf16", "zero grads", "muon momentum", "newton-schulz", "adamw", "other"};
  return id < kCount ? names[id] : "?";
}

namespace detail {
bool g_enabled = false;

void begin(Id id) {
  ThreadState& s = self();
  int phase = s.stack.empty() ? 0 : s.stack.back().phase;
  if (is_phase(id)) phase = int(id);
  s.stack.push_back({id, now_ns(), phase});
}

void end(Id id) {
  ThreadState& s = self();
  NT_CHECK(!s.stack.empty() && s.stack.back().id == id, "profile zone %s closed out of order", name(id));
  const ThreadState::Open o = s.stack.back();
  s.stack.pop_back();
  const int64_t dur = now_ns() - o.begin_ns;
  // A phase zone counts under its own phase row; an op under the enclosing phase.
  s.total_ns[o.phase][id] += dur;
  s.calls[o.phase][id] += 1;
  if (s.events.size() < kMaxEvents) s.events.push_back({o.begin_ns, dur, id, nullptr});
  else ++s.dropped;
}
}  // namespace detail

WorkZone::WorkZone(const char* label) : label_(label), on_(detail::g_enabled) {
  if (on_) begin_ns_ = now_ns();
}

WorkZone::~WorkZone() {
  if (!on_) return;
  ThreadState& s = self();
  if (s.events.size() < kMaxEvents) s.events.push_back({begin_ns_, now_ns() - begin_ns_, kOther, label_});
  else ++s.dropped;
}

void enable(bool on) {
  if (on && !detail::g_enabled) registry().t0 = Clock::now();
  detail::g_enabled = on;
}

void reset() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& t : r.threads) {
    NT_CHECK(t->stack.empty(), "profile::reset with a zone open");
    const int tid = t->tid;
    *t = ThreadState{};
    t->tid = tid;
  }
  r.t0 = Clock::now();
}

Totals totals() {
  Registry& r = registry();
  int64_t total[kPhases][kCount] = {}, calls[kPhases][kCount] = {};
  Totals out;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& t : r.threads) {
      for (int p = 0; p < kPhases; ++p)
        for (int i = 0; i < kCount; ++i) total[p][i] += t->total_ns[p][i], calls[p][i] += t->calls[p][i];
      out.dropped_events += t->dropped;
    }
  }
  out.steps = calls[0][kStep];
  out.step_ms = double(total[0][kStep]) * 1e-6;
  out.wall_ms = double(now_ns()) * 1e-6;
  auto row = [&](int p, int i) {
    if (calls[p][i] > 0) out.rows.push_back({Id(p), Id(i), double(total[p][i]) * 1e-6, calls[p][i]});
  };
  // Phases first (their own rows), then each phase's ops sorted by time, then ops outside phases.
  for (int p = kForward; p <= kCheckpoint; ++p) {
    row(p, p);
    std::vector<int> ids;
    for (int i = kEmbed; i < kCount; ++i)
      if (calls[p][i]) ids.push_back(i);
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return total[p][a] > total[p][b]; });
    for (int i : ids) row(p, i);
  }
  for (int i = kEmbed; i < kCount; ++i) row(0, i);
  return out;
}

std::string report(double flops_per_step, double peak_gflops, const std::string& peak_label) {
  const Totals t = totals();
  const double base_ms = t.base_ms();
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "profile: %lld steps, %.1f ms in steps (shares are of %s)\n", (long long)t.steps,
                t.step_ms, t.steps > 0 ? "the step time" : "the wall time");
  out += line;
  std::snprintf(line, sizeof line, "  %-12s %-16s %11s %9s %7s %10s\n", "phase", "zone", "total ms", "calls", "share",
                "mean ms");
  out += line;
  for (const ZoneTotal& z : t.rows) {
    std::snprintf(line, sizeof line, "  %-12s %-16s %11.1f %9lld %6.1f%% %10.3f\n",
                  z.phase == kStep ? "-" : name(z.phase), name(z.id), z.ms, (long long)z.calls,
                  100.0 * z.ms / base_ms, z.ms / double(z.calls));
    out += line;
  }
  if (t.steps > 0 && flops_per_step > 0 && peak_gflops > 0) {
    const double gflops = t.step_gflops(flops_per_step);
    std::snprintf(line, sizeof line, "  model FLOPs: %.1f GFLOP/s over the steps = MFU %.1f %% of %s\n", gflops,
                  100.0 * gflops / peak_gflops, peak_label.c_str());
    out += line;
  }
  if (t.dropped_events > 0) {
    std::snprintf(line, sizeof line, "  (%lld trace events dropped beyond %zu)\n", (long long)t.dropped_events,
                  kMaxEvents);
    out += line;
  }
  return out;
}

void write_trace(const std::string& path) {
  Registry& r = registry();
  std::string s;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    s.reserve(1 << 20);
    s += "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
    bool first = true;
    char buf[256];
    for (auto& t : r.threads) {
      std::snprintf(buf, sizeof buf,
                    "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s %d\"}}",
                    first ? "" : ",\n", t->tid, t->tid == 0 ? "main" : "worker", t->tid);
      s += buf;
      first = false;
      for (const Event& e : t->events) {
        std::snprintf(buf, sizeof buf, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                      e.label ? e.label : name(e.id), t->tid, double(e.begin_ns) * 1e-3, double(e.dur_ns) * 1e-3);
        s += buf;
      }
    }
    s += "\n]}\n";
  }
  write_file_atomic(path, s);
}

}  // namespace nt::profile
