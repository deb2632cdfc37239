// SPDX-License-Identifier: MIT
// The CPU backend's kernel tables, one per instruction-set level, chosen explicitly: the tests
// run every table this CPU can execute, the program the best one (cpu_kernels, kernels.h).
#pragma once
#include <vector>

#include "kernels/kernels.h"

namespace nt {

// The levels in increasing order; each table uses only its level's instructions and those
// below (AVX-512 is F and BW; AMX includes AVX-512-BF16).
enum class CpuIsa { kAvx2, kAvx512, kAvx512Bf16, kAmx };
inline constexpr CpuIsa kCpuIsas[] = {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16, CpuIsa::kAmx};
// "cpu-avx2", "cpu-avx512", "cpu-avx512bf16", "cpu-amx": the table's name.
const char* cpu_isa_name(CpuIsa isa);

// The table of one level, whatever this CPU has (building it runs nothing; calling its kernels
// needs the level: see cpu_kernel_tables).
const KernelTable& cpu_kernel_table(CpuIsa isa);
// Every table this process can execute, lowest level first: AVX2 always, AVX-512 where the CPU
// has avx512f and avx512bw, AVX-512-BF16 where it also has avx512bf16, AMX where the OS lets the
// process use amx-bf16 tiles. NANOTRAIN_NO_AVX512 / NANOTRAIN_NO_AMX (core/system.h) take the
// levels above AVX2 / AVX-512-BF16 away for the whole program. cpu_kernels() is the last one.
const std::vector<const KernelTable*>& cpu_kernel_tables();
// Whether cpu_kernel_tables() holds the table of this level.
bool cpu_can_run(CpuIsa isa);

}  // namespace nt
