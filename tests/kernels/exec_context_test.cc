// SPDX-License-Identifier: MIT
// The execution context (kernels/exec.h): an op runs on the threads its context allows and no
// more, gives the same values on one thread as on two where the kernels promise it, and two
// contexts with workspaces of their own run the same op side by side (Muon's workers).
#include <gtest/gtest.h>
#include <omp.h>

#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_tables.h"
#include "backends/ref/ref_backend.h"
#include "kernel_test_util.h"
#include "kernels/exec.h"
#include "profile/profile.h"
#include "test_util.h"

namespace nt {
namespace {

using test::randn;
using test::to_f32;

TEST(Workspace, BuffersAreAlignedGrowAndStayPerThread) {
  Workspace w(2);
  void* a = w.get(0, 3, 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  EXPECT_EQ(w.get(0, 3, 50), a) << "a smaller request reuses the buffer";
  void* b = w.get(1, 3, 100);
  EXPECT_NE(a, b) << "threads have buffers of their own";
  void* c = w.get(0, 3, 1 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  EXPECT_GE(w.bytes(), size_t(1 << 20) + 100);
  EXPECT_DEATH(w.get(2, 0, 8), "workspace") << "thread 2 of a two-thread workspace";
  EXPECT_DEATH(w.get(0, Workspace::kSlots, 8), "workspace");
}

// The threads that opened a work slice named `zone` while f ran, from the profiler's trace (each
// thread of a CPU kernel's parallel region opens one).
std::set<int> threads_in_zone(const std::string& zone, const std::function<void()>& f) {
  profile::reset();
  profile::enable(true);
  {
    profile::Zone step(profile::kStep);
    f();
  }
  profile::enable(false);
  const std::string path = test::tmp_dir("exec_context") + "/trace.json";
  profile::write_trace(path);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::set<int> tids;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"] == zone) tids.insert(e["tid"].get<int>());
  profile::reset();
  return tids;
}

// A one-thread context keeps the op on one thread, and a two-thread one spreads it over two,
// whatever OpenMP's own thread count is.
TEST(ExecContext, OpsRunOnTheContextsThreads) {
  const int64_t rows = 4096, dim = 64;
  std::vector<float> x = to_f32(randn(size_t(rows * dim), 1)), y(x.size()), rstd(static_cast<size_t>(rows));
  const int saved = omp_get_max_threads();
  omp_set_num_threads(4);  // more than either context: the context, not OpenMP's count, decides
  for (const KernelTable* t : cpu_kernel_tables()) {
    const ExecContext one(1), two(2);
    const std::set<int> on_one =
        threads_in_zone("rmsnorm fwd", [&] { t->rmsnorm_fwd(one, y.data(), rstd.data(), x.data(), rows, dim, 1e-6f); });
    const std::set<int> on_two =
        threads_in_zone("rmsnorm fwd", [&] { t->rmsnorm_fwd(two, y.data(), rstd.data(), x.data(), rows, dim, 1e-6f); });
    EXPECT_EQ(on_one.size(), 1u) << t->name;
    EXPECT_EQ(on_two.size(), 2u) << t->name;
  }
  omp_set_num_threads(saved);
}

// Ops whose values do not depend on the thread count (each row, element or channel range is one
// thread's): one thread and two give the same bits.
TEST(ExecContext, OneThreadAndTwoGiveTheSameBits) {
  const int64_t rows = 700, dim = 96, n = rows * dim, vocab = 50;
  const std::vector<float> x = to_f32(randn(size_t(n), 2)), g = to_f32(randn(size_t(n), 3));
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) ids[size_t(i)] = int32_t((i * 7) % vocab);
  const ExecContext one(1), two(2);
  for (const KernelTable* t : cpu_kernel_tables()) {
    auto run = [&](const ExecContext& ctx) {
      std::vector<float> out(static_cast<size_t>(n)), rstd(static_cast<size_t>(rows)), act(static_cast<size_t>(n)),
          dwte(size_t(vocab * dim), 0.0f);
      std::vector<float> p = x, m(size_t(n), 0.0f), v(size_t(n), 0.0f);
      t->rmsnorm_fwd(ctx, out.data(), rstd.data(), x.data(), rows, dim, 1e-6f);
      t->relu2_fwd(ctx, act.data(), x.data(), n);
      t->embed_bwd(ctx, dwte.data(), g.data(), ids.data(), rows, dim);
      t->adamw_step(ctx, p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.1f, 0.05f);
      std::vector<float> all = out;
      for (const auto* part : {&rstd, &act, &dwte, &p, &m, &v}) all.insert(all.end(), part->begin(), part->end());
      return all;
    };
    const std::vector<float> a = run(one), b = run(two);
    ASSERT_EQ(a.size(), b.size());
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    EXPECT_EQ(differ, 0u) << t->name;
  }
}

// Muon's pattern: the threads of one parallel region each run the same ops on their own matrix
// with a one-thread context of their own; every result matches the same op run alone. The
// products take GEMMs with per-thread scratch (the bf16 ones widen or pack their operands).
TEST(ExecContext, TwoContextsRunTheSameOpsSideBySide) {
  const int64_t m = 96, n = 160, k = 64;
  constexpr int kWorkers = 2;
  for (const KernelTable* t : cpu_kernel_tables()) {
    std::vector<std::vector<float>> a(kWorkers), b(kWorkers), want(kWorkers), got(kWorkers);
    std::vector<std::vector<uint16_t>> ah(kWorkers), bh(kWorkers);
    for (int w = 0; w < kWorkers; ++w) {
      a[size_t(w)] = to_f32(randn(size_t(m * k), 10 + w));
      b[size_t(w)] = to_f32(randn(size_t(k * n), 20 + w));
      ah[size_t(w)] = test::bf16_of(a[size_t(w)]);
      bh[size_t(w)] = test::bf16_of(b[size_t(w)]);
      want[size_t(w)].assign(size_t(2 * m * n), 0.0f);
      got[size_t(w)].assign(size_t(2 * m * n), 0.0f);
    }
    auto work = [&](const ExecContext& ctx, int w, std::vector<float>& out) {
      for (int rep = 0; rep < 20; ++rep) {
        t->matmul(ctx, out.data(), a[size_t(w)].data(), b[size_t(w)].data(), m, n, k, false, false, 0.0f);
        t->matmul_bf16(ctx, out.data() + m * n, ah[size_t(w)].data(), bh[size_t(w)].data(), m, n, k, false, false,
                       0.0f);
      }
    };
    {
      const ExecContext alone(1);
      for (int w = 0; w < kWorkers; ++w) work(alone, w, want[size_t(w)]);
    }
    std::vector<std::unique_ptr<ExecContext>> contexts;
    for (int w = 0; w < kWorkers; ++w) contexts.push_back(std::make_unique<ExecContext>(1));
    int team = 0;
#pragma omp parallel num_threads(kWorkers)
    {
      const int w = omp_get_thread_num();
#pragma omp single
      team = omp_get_num_threads();
      work(*contexts[size_t(w)], w, got[size_t(w)]);
    }
    if (team < kWorkers) GTEST_SKIP() << "OpenMP gave " << team << " threads";
    for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(got[size_t(w)], want[size_t(w)]) << t->name << " worker " << w;
  }
}

// The reference backend ignores the context: any thread count gives its one result.
TEST(ExecContext, ReferenceIgnoresTheThreadCount) {
  const KernelTable& r = ref_kernels();
  const int64_t m = 17, n = 9, k = 33;
  const std::vector<float> a = to_f32(randn(size_t(m * k), 5)), b = to_f32(randn(size_t(k * n), 6));
  std::vector<float> c1(static_cast<size_t>(m * n)), c3(static_cast<size_t>(m * n));
  const ExecContext one(1), three(3);
  r.matmul(one, c1.data(), a.data(), b.data(), m, n, k, false, false, 0.0f);
  r.matmul(three, c3.data(), a.data(), b.data(), m, n, k, false, false, 0.0f);
  EXPECT_EQ(c1, c3);
}

}  // namespace
}  // namespace nt
