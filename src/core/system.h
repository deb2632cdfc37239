// SPDX-License-Identifier: MIT
// Facts about the machine and process: memory, CPU features, threads, peak RSS.
#pragma once
#include <cstddef>
#include <string>

namespace nt {

size_t available_memory_bytes();  // MemAvailable from /proc/meminfo (0 if unknown)
size_t peak_rss_bytes();          // getrusage maxrss
double process_cpu_seconds();     // user + system time of every thread so far (getrusage)
struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512bf16 = false;
  // AMX tiles with bf16 dot products, usable by this process: the CPU has them, the OS saves
  // their state, and Linux granted the process its tile data (requested here, once).
  bool amx_bf16 = false;
  // An AMD Zen 4 core (family 19h with AVX-512): not a feature, a tuning fact. Where the best
  // choice of a kernel differs between the cores measured, it picks by this (attention_tiled.h's
  // prefetch hint). Set whatever NANOTRAIN_NO_AVX512 says: the core is the same.
  bool amd_zen4 = false;
  std::string describe() const;  // "avx2 fma avx512f ..."
};
CpuFeatures cpu_features();
// Sets the OpenMP thread count (0 = all cores; more than 4 per usable core, or negative, is an
// nt::Error naming --threads) and pins each thread to one core, which keeps
// the kernel from parking both threads on one core. Returns the count used. With `slots`
// processes sharing this machine's cores (ranks of one job), process `slot` takes its own
// 1/slots of the cores by default, unless its launcher already bound it to fewer than all.
int setup_threads(int threads, int slot = 0, int slots = 1);
// The thread count the job's ops run with: setup_threads' once it has run, else OpenMP's default
// (OMP_NUM_THREADS or every core; tests and tools that never call it). The model, the optimizer
// and the evaluators build their op contexts (kernels/exec.h) from it.
int job_threads();
std::string hostname();
// The current time in UTC, formatted by strftime (e.g. "%Y-%m-%d").
std::string utc_time(const char* format);
// Makes the C allocator keep freed memory for reuse instead of returning it to the kernel: large
// blocks come from the heap rather than from a fresh mmap each time, and the heap is not trimmed.
// oneDNN's GEMMs allocate their packing buffers per call; with glibc's defaults those pages were
// faulted in again and again (a d6 bench run: 644k page faults, 4.0 s of system time; 344k and
// 2.2 s with this), and a head GEMM ran 3x slower for its first dozen calls. Call once, first.
void keep_freed_memory();

}  // namespace nt
