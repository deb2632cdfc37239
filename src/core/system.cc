// SPDX-License-Identifier: MIT
#include "core/system.h"

#include <cpuid.h>
#include <malloc.h>
#include <omp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "core/check.h"

namespace nt {

size_t available_memory_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
  std::fclose(f);
  return kb * 1024;
}

size_t peak_rss_bytes() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

double process_cpu_seconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const auto s = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

namespace {
// AMX needs three yeses: CPUID (AMX-TILE and AMX-BF16), XCR0 (the OS saves tile config and
// tile data), and, since Linux 5.16, the process's own request for the 8 KiB of tile state per
// thread (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA). Without the request the first
// tile instruction kills the process with SIGILL.
bool amx_bf16_usable() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1) || !((d >> 22) & 1)) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return false;  // XTILECFG and XTILEDATA
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// The CPU's family (base plus extended, as AMD counts it) if it is AMD's, else 0.
unsigned amd_family() {
  unsigned a, b, c, d;
  // "AuthenticAMD" in EBX, EDX, ECX.
  if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541 || d != 0x69746e65 || c != 0x444d4163) return 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const unsigned base = (a >> 8) & 0xf;
  return base == 0xf ? base + ((a >> 20) & 0xff) : base;
}
}  // namespace

CpuFeatures cpu_features() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d)) f.fma = (c >> 12) & 1;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512bw = (b >> 30) & 1;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = (a >> 5) & 1;
  f.amd_zen4 = amd_family() == 0x19 && f.avx512f;  // family 19h without AVX-512 is Zen 3
  // NANOTRAIN_NO_AVX512=1 runs an AVX-512 machine as the AVX2 floor (tests and comparisons).
  static const bool no_avx512 = std::getenv("NANOTRAIN_NO_AVX512") != nullptr;
  if (no_avx512) f.avx512f = f.avx512bw = f.avx512bf16 = false;
  // NANOTRAIN_NO_AMX=1 keeps the AVX-512-BF16 paths on an AMX machine (to compare the two).
  static const bool amx = !no_avx512 && !std::getenv("NANOTRAIN_NO_AMX") && amx_bf16_usable();
  f.amx_bf16 = amx && f.avx512bf16 && f.avx512bw;
  return f;
}

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* n) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += n;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512bf16, "avx512bf16");
  add(amx_bf16, "amx-bf16");
  return s.empty() ? "none" : s;
}

namespace {
std::atomic<int> g_job_threads{0};  // 0: setup_threads has not run
}  // namespace

int job_threads() {
  const int t = g_job_threads.load(std::memory_order_relaxed);
  return t > 0 ? t : omp_get_max_threads();
}

int setup_threads(int threads, int slot, int slots) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  // omp_get_max_threads honours OMP_NUM_THREADS and otherwise counts the cores this process may
  // use when OpenMP started (before any OMP_PROC_BIND binding of the main thread).
  if (threads < 0) fail("--threads %d: must be >= 0 (0: every core)", threads);
  // More threads than a few per core only slow the kernels down (they share the cores); a huge
  // count would exhaust the process's memory for thread stacks.
  const int cores = std::max<int>(1, int(cpus.size()));
  if (threads > 4 * cores)
    fail("--threads %d: at most %d (4 per core; this process may use %d)", threads, 4 * cores, cores);
  // Ranks launched unbound all see every core: each takes its own share (OMP_NUM_THREADS wins).
  const bool share = slots > 1 && long(cpus.size()) >= sysconf(_SC_NPROCESSORS_ONLN);
  const int per_slot = std::max(1, cores / std::max(slots, 1));
  if (threads == 0) threads = share && !std::getenv("OMP_NUM_THREADS") ? per_slot : omp_get_max_threads();
  if (share) {
    // Its own cores; with more processes than cores, a core shared with as few others as possible.
    const size_t first = cores >= slots ? size_t(slot % slots) * size_t(per_slot) : size_t(slot % cores);
    std::rotate(cpus.begin(), cpus.begin() + std::ptrdiff_t(first), cpus.end());
    cpus.resize(std::min(cpus.size(), size_t(per_slot)));
  }
  omp_set_num_threads(threads);
  g_job_threads.store(threads, std::memory_order_relaxed);
  if (!cpus.empty() && threads <= int(cpus.size())) {
#pragma omp parallel num_threads(threads)
    {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[size_t(omp_get_thread_num())], &one);
      sched_setaffinity(0, sizeof one, &one);
    }
  }
  return threads;
}

void keep_freed_memory() {
  // Blocks under 256 MiB from the heap (the threshold is fixed, so glibc's own adjustment stops),
  // and no trimming below 1 GiB of free heap top. Larger blocks (the arenas of big models) are
  // still mapped and unmapped on their own.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

std::string hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string utc_time(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

}  // namespace nt
