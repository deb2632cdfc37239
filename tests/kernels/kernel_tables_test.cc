// SPDX-License-Identifier: MIT
// The kernel tables themselves: every table complete for what it declares, the gradient
// conventions on each, device selection, the CPU facts the tables are chosen by, and a report
// of which tables this machine ran (KernelTables.Report).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/buffer.h"
#include "core/check.h"
#include "core/system.h"
#include "kernel_test_util.h"

namespace nt {
namespace {

using test::randn;
using test::to_f32;

// The required ops: the function pointers from matmul up to the properties.
constexpr size_t kFirstOp = offsetof(KernelTable, matmul);
constexpr size_t kRequiredOps = (offsetof(KernelTable, bf16_matrix_tiles) - kFirstOp) / sizeof(void*);

// The ref table and every level's CPU table (built whether or not this CPU can run them).
std::vector<const KernelTable*> all_tables() {
  std::vector<const KernelTable*> all = {&ref_kernels()};
  for (CpuIsa isa : kCpuIsas) all.push_back(&cpu_kernel_table(isa));
  return all;
}

// The kernels' fast paths assume Buffer's alignment (AMX tile rows, streaming stores): 64 bytes,
// and 2 MiB (a huge page) from 4 MiB up; every buffer starts zeroed, after a resize too.
TEST(KernelConvention, BuffersAreAlignedAndZeroed) {
  for (size_t n : {size_t(1), size_t(1000), Buffer<float>::kHugeFrom / 4 - 1, Buffer<float>::kHugeFrom / 4 + 5}) {
    Buffer<float> b(n);
    const auto at = reinterpret_cast<uintptr_t>(b.data());
    EXPECT_EQ(at % 64, 0u) << n;
    if (n * sizeof(float) >= Buffer<float>::kHugeFrom) {
      EXPECT_EQ(at % Buffer<float>::kHugePage, 0u) << n;
    }
    for (size_t i = 0; i < n; i += 997) ASSERT_EQ(b[i], 0.0f) << n;
    b[n - 1] = 3.0f;
    b.resize(n);
    EXPECT_EQ(b[n - 1], 0.0f) << n;
  }
}

void check_conventions(const KernelTable* kt) {
  const int64_t n = 6, c = 5;
  std::vector<int32_t> ids = {0, 2, 2, 1, 3, 0};
  auto dout = to_f32(randn(n * c, 70));
  std::vector<float> dw(4 * c, 0.0f);
  kt->embed_bwd(test_ctx(), dw.data(), dout.data(), ids.data(), n, c);
  auto once = dw;
  kt->embed_bwd(test_ctx(), dw.data(), dout.data(), ids.data(), n, c);
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_FLOAT_EQ(dw[i], 2 * once[i]) << kt->name;
  // rmsnorm_bwd without accumulate overwrites whatever was there.
  auto x = to_f32(randn(n * c, 71));
  std::vector<float> y(x.size()), rstd(static_cast<size_t>(n)), dx1(x.size(), 0.f), dx2(x.size(), 123.f);
  kt->rmsnorm_fwd(test_ctx(), y.data(), rstd.data(), x.data(), n, c, 1e-6f);
  kt->rmsnorm_bwd(test_ctx(), dx1.data(), dout.data(), y.data(), rstd.data(), n, c, false);
  kt->rmsnorm_bwd(test_ctx(), dx2.data(), dout.data(), y.data(), rstd.data(), n, c, false);
  EXPECT_EQ(dx1, dx2) << kt->name;
}

TEST(KernelConvention, ParamGradsAccumulateActivationGradsOverwrite) { check_conventions(&ref_kernels()); }
class KernelConventionTable : public test::TableTest {};
TEST_P(KernelConventionTable, ParamGradsAccumulateActivationGradsOverwrite) { check_conventions(&kt()); }
NT_TABLE_TESTS(KernelConventionTable);

// Every table declares fp32 and bf16 and fills their ops; its optional fused ops are exactly
// those its capabilities declare; and every function pointer before the properties is set.
TEST(KernelTableTest, NoNullEntries) {
  for (const KernelTable* kt : all_tables()) {
    EXPECT_TRUE(kt->caps.fp32 && kt->caps.bf16) << kt->name;
    EXPECT_EQ(missing_ops(*kt), std::vector<std::string>{}) << kt->name;
    EXPECT_EQ(table_problems(*kt), std::vector<std::string>{}) << kt->name;
    const auto* p = reinterpret_cast<const void* const*>(reinterpret_cast<const char*>(kt) + kFirstOp);
    for (size_t i = 0; i < kRequiredOps; ++i) EXPECT_NE(p[i], nullptr) << kt->name << " " << i;
  }
}

// missing_ops knows every required entry (one added to KernelTable must be added to its lists),
// and validate names what is wrong.
TEST(KernelTableTest, MissingOpsAreNamedAtValidation) {
  KernelTable empty = KernelTable();  // (a designated initializer that leaves ops out does not compile)
  empty.name = "empty", empty.caps.fp32 = empty.caps.bf16 = true;
  EXPECT_EQ(missing_ops(empty).size(), kRequiredOps);
  KernelTable t = cpu_kernel_table(CpuIsa::kAvx2);
  t.rmsnorm_bwd = nullptr;
  EXPECT_EQ(missing_ops(t), std::vector<std::string>{"rmsnorm_bwd"});
  EXPECT_NE(test::error_of([&] { validate(t); }).find("cpu-avx2: rmsnorm_bwd is null"), std::string::npos);
  t = cpu_kernel_table(CpuIsa::kAvx2);
  t.caps.bf16 = false;
  t.to_bf16 = nullptr;  // not required where bf16 is not declared
  EXPECT_EQ(missing_ops(t), std::vector<std::string>{});
  t = cpu_kernel_table(CpuIsa::kAvx512Bf16);
  t.caps.packed_b_bf16 = false;  // present but undeclared
  EXPECT_EQ(table_problems(t).size(), 3u);
  t.caps.packed_b_bf16 = true;
  t.pack_b_bf16 = nullptr;  // declared but null
  EXPECT_EQ(missing_ops(t), std::vector<std::string>{"pack_b_bf16"});
}

// The CPU tables this process runs: the lowest level first, each named for its level, and the
// program's table the best of them.
TEST(KernelTableTest, CpuTablesByLevel) {
  const auto& tables = cpu_kernel_tables();
  ASSERT_FALSE(tables.empty());
  EXPECT_EQ(tables.front(), &cpu_kernel_table(CpuIsa::kAvx2));
  EXPECT_EQ(&cpu_kernels(), tables.back());
  for (CpuIsa isa : kCpuIsas) EXPECT_STREQ(cpu_kernel_table(isa).name, cpu_isa_name(isa));
  EXPECT_TRUE(cpu_can_run(CpuIsa::kAvx2));
  const CpuFeatures f = cpu_features();
  EXPECT_EQ(cpu_can_run(CpuIsa::kAvx512), f.avx512f && f.avx512bw);
  EXPECT_EQ(cpu_can_run(CpuIsa::kAvx512Bf16), f.avx512f && f.avx512bw && f.avx512bf16);
  EXPECT_EQ(cpu_can_run(CpuIsa::kAmx), f.avx512f && f.avx512bw && f.avx512bf16 && f.amx_bf16);
  EXPECT_EQ(cpu_kernel_table(CpuIsa::kAmx).bf16_matrix_tiles, true);
  EXPECT_EQ(cpu_kernel_table(CpuIsa::kAvx512Bf16).bf16_matrix_tiles, false);
}


TEST(KernelTableTest, UnknownDeviceIsAnError) {
  EXPECT_THROW(backend_for_device("tpu"), Error);
  EXPECT_THROW(backend_for_device("cuda"), Error);
  EXPECT_STREQ(backend_for_device("ref").kernels().name, "ref");
  EXPECT_EQ(&backend_for_device("cpu").kernels(), &cpu_kernels());
  // The backend lists every table this machine can execute, the one it runs last.
  const auto tables = backend_for_device("cpu").tables();
  EXPECT_EQ(tables, cpu_kernel_tables());
}

// cpu_features().amd_zen4 (the attention's prefetch hint follows it) against what the kernel
// says of the first CPU: vendor, family and the avx512f flag in /proc/cpuinfo.
TEST(CpuFeatures, Zen4AsProcCpuinfoSays) {
  std::ifstream in("/proc/cpuinfo");
  if (!in) GTEST_SKIP() << "no /proc/cpuinfo";
  std::string line, vendor, flags;
  int family = -1;
  while (std::getline(in, line) && !line.empty()) {  // the first processor's block
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string value = line.substr(colon + 1);
    auto is = [&](const char* key) { return line.rfind(key, 0) == 0; };
    if (is("vendor_id")) vendor = value;
    if (is("cpu family")) family = std::stoi(value);
    if (is("flags")) flags = value + " ";
  }
  if (vendor.empty() || family < 0 || flags.empty()) GTEST_SKIP() << "/proc/cpuinfo without vendor, family or flags";
  const bool zen4 = vendor.find("AuthenticAMD") != std::string::npos && family == 0x19 &&
                    flags.find(" avx512f ") != std::string::npos;
  EXPECT_EQ(cpu_features().amd_zen4, zen4) << vendor << ", family " << family;
}

// Which tables the kernel tests ran here and which they skipped, and why (test.sh prints it).
TEST(KernelTables, Report) {
  for (CpuIsa isa : kCpuIsas) {
    if (cpu_can_run(isa))
      std::printf("kernel table %-15s tested\n", cpu_isa_name(isa));
    else
      std::printf("kernel table %-15s SKIPPED: %s\n", cpu_isa_name(isa), test::why_not_runnable(isa).c_str());
  }
  std::printf("kernel table %-15s (the program's: cpu_kernels())\n", cpu_kernels().name);
}

}  // namespace
}  // namespace nt
