// SPDX-License-Identifier: MIT
// What the kernel tests share: data helpers, and the parameterised fixtures that run a family of
// cases against every CPU kernel table (backends/cpu/cpu_tables.h), by name: a table this process
// cannot execute is reported SKIPPED with the reason, never passed.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "backends/ref/ops_ref.h"
#include "core/buffer.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_tables.h"
#include "backends/ref/ref_backend.h"
#include "kernels/backend.h"
#include "kernels/kernels.h"
#include "test_util.h"

namespace nt::test {

using Vec = std::vector<double>;

// n bf16 values: randn(n, seed) rounded.
inline Buffer<uint16_t> randn_bf16(int64_t n, uint64_t seed) {
  Buffer<uint16_t> h{size_t(n)};
  const auto f = to_f32(randn(size_t(n), seed));
  ref::to_bf16(h.data(), f.data(), n);
  return h;
}

// v rounded to bf16.
inline std::vector<uint16_t> bf16_of(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  ref::to_bf16(h.data(), v.data(), int64_t(v.size()));
  return h;
}

// "m x n x k" as the GEMM tests name a shape.
inline std::string gemm_shape(int64_t m, int64_t n, int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// The largest |w|, or 1e-30.
inline double max_abs(const Vec& w) {
  double s = 1e-30;
  for (double x : w) s = std::max(s, std::abs(x));
  return s;
}

// Elements of bf16 `got` farther from `want` than half a bf16 ulp (2^-8 relative) plus
// slack * scale: an fp32 result rounded once to bf16 is within that.
inline int bf16_misses(const uint16_t* got, const Vec& want, double slack, double scale) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    bad += std::abs(ref::from_bf16_1(got[i]) - want[i]) > std::ldexp(std::abs(want[i]), -8) + slack * scale;
  return bad;
}

// Rotary tables (T, D/2) for T positions of head dim D (the model's frequencies); an odd D's
// last element has no pair and no entry.
inline void rope_tables(int64_t T, int64_t D, Vec& cos, Vec& sin) {
  const int64_t half = D / 2;
  cos.resize(static_cast<size_t>(T * half));
  sin.resize(static_cast<size_t>(T * half));
  for (int64_t p = 0; p < T; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double a = double(p) * std::pow(10000.0, -2.0 * double(j) / double(D));
      cos[static_cast<size_t>(p * half + j)] = std::cos(a);
      sin[static_cast<size_t>(p * half + j)] = std::sin(a);
    }
}

// Why a level's table is not among cpu_kernel_tables() here.
inline std::string why_not_runnable(CpuIsa isa) {
  if (std::getenv("NANOTRAIN_NO_AVX512")) return "NANOTRAIN_NO_AVX512 is set";
  if (isa == CpuIsa::kAmx && std::getenv("NANOTRAIN_NO_AMX")) return "NANOTRAIN_NO_AMX is set";
  switch (isa) {
    case CpuIsa::kAvx512: return "no AVX-512 (F, BW) on this CPU";
    case CpuIsa::kAvx512Bf16: return "no AVX-512-BF16 on this CPU";
    case CpuIsa::kAmx: return "no AMX usable on this CPU";
    default: return "?";
  }
}

// Skips the test, by name and with the reason, where this process cannot run the level.
#define NT_NEEDS(isa) \
  if (!cpu_can_run(isa)) GTEST_SKIP() << cpu_isa_name(isa) << ": " << test::why_not_runnable(isa)

// "cpu-avx512bf16" as a test name's part: "cpu_avx512bf16".
inline std::string name_part(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// One case of a family on one table. Case has `std::string name() const`.
template <class Case>
struct OnTable {
  using CaseType = Case;
  CpuIsa isa;
  Case c;
};

// Every level's table with every case: the instantiation is the same on every machine (the
// tables it cannot run are skipped by name).
template <class Case>
std::vector<OnTable<Case>> on_every_table(const std::vector<Case>& cases) {
  std::vector<OnTable<Case>> all;
  for (CpuIsa isa : kCpuIsas)
    for (const Case& c : cases) all.push_back({isa, c});
  return all;
}

// How a failing case names its parameter.
template <class Case>
void PrintTo(const OnTable<Case>& p, std::ostream* os) {
  *os << cpu_isa_name(p.isa) << " " << p.c.name();
}

template <class Case>
std::string on_table_name(const testing::TestParamInfo<OnTable<Case>>& info) {
  return name_part(std::string(cpu_isa_name(info.param.isa)) + "_" + info.param.c.name());
}
inline std::string table_name(const testing::TestParamInfo<CpuIsa>& info) {
  return name_part(cpu_isa_name(info.param));
}

// A family's cases on each table: kt() is the case's table; skipped where it cannot run.
template <class Case>
class TableCaseTest : public testing::TestWithParam<OnTable<Case>> {
 protected:
  void SetUp() override {
    const CpuIsa isa = this->GetParam().isa;
    if (!cpu_can_run(isa)) GTEST_SKIP() << cpu_isa_name(isa) << ": " << why_not_runnable(isa);
    table_ = &cpu_kernel_table(isa);
  }
  const KernelTable& kt() const { return *table_; }
  const Case& tc() const { return this->GetParam().c; }
  CpuIsa isa() const { return this->GetParam().isa; }

 private:
  const KernelTable* table_ = nullptr;
};

// A check that loops over its own cases, once per table.
class TableTest : public testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpu_can_run(GetParam())) GTEST_SKIP() << cpu_isa_name(GetParam()) << ": " << why_not_runnable(GetParam());
    table_ = &cpu_kernel_table(GetParam());
  }
  const KernelTable& kt() const { return *table_; }
  CpuIsa isa() const { return GetParam(); }

 private:
  const KernelTable* table_ = nullptr;
};

#define NT_TABLE_TESTS(Fixture) \
  INSTANTIATE_TEST_SUITE_P(Cpu, Fixture, testing::ValuesIn(kCpuIsas), ::nt::test::table_name)
#define NT_TABLE_CASE_TESTS(Family, Fixture, cases)                                       \
  INSTANTIATE_TEST_SUITE_P(Family, Fixture, testing::ValuesIn(::nt::test::on_every_table(cases)), \
                           ::nt::test::on_table_name<typename Fixture::ParamType::CaseType>)

// Runs f on every table this process can execute (the NT_TEST_*_SHAPES extra cases, which
// are not known when the tests are listed).
inline void for_each_runnable_table(const std::function<void(const KernelTable&)>& f) {
  for (const KernelTable* t : cpu_kernel_tables()) f(*t);
}

}  // namespace nt::test

namespace nt {
inline void PrintTo(CpuIsa isa, std::ostream* os) { *os << cpu_isa_name(isa); }
}  // namespace nt
