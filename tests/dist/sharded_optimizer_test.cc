// SPDX-License-Identifier: MIT
// The sharded optimizer (ZeRO-1) in one process: N optimizers, each owning its ranks' tensors,
// hold together exactly the state of one optimizer over every tensor (each about 1/N of it),
// update their tensors to the same bits, and their exported state is the whole optimizer's.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/rng.h"
#include "model/config.h"
#include "model/params.h"
#include "optim/optimizer.h"
#include "train/ranks.h"

namespace nt {
namespace {

ModelConfig small_model() {
  ModelConfig mc;
  mc.depth = 3, mc.d_model = 64, mc.n_head = 2, mc.n_kv_head = 1, mc.head_dim = 32, mc.seq_len = 16, mc.vocab_size = 96;
  return mc;
}

OptimConfig small_optim(const ModelConfig& mc) {
  OptimConfig oc;
  oc.normuon = true;  // a matrix's second moment too
  oc.resolve(mc.d_model, mc.tie_embeddings);
  return oc;
}

// The padded state floats of the tensors each rank owns.
std::vector<double> state_per_rank(const std::vector<ParamSpec>& specs, const std::vector<int>& owners, int ranks) {
  std::vector<double> per(size_t(ranks), 0.0);
  for (size_t i = 0; i < specs.size(); ++i) per[size_t(owners[i])] += double((specs[i].numel() + 15) / 16 * 16);
  return per;
}

TEST(ShardedOptimizer, OwnersDivideTheStateEvenly) {
  for (const char* preset : {"tiny", "cpu"}) {
    ShapeFlags f;
    f.preset = preset;
    const std::vector<ParamSpec> specs = param_specs(resolve_model_config(f, 8192));
    const double total = double(arena_numel(specs));
    double largest = 0;
    for (const auto& s : specs) largest = std::max(largest, double(s.numel()));
    for (int ranks : {2, 3, 5}) {
      const std::vector<double> per = state_per_rank(specs, tensor_owners(specs, ranks), ranks);
      double sum = 0;
      for (double x : per) sum += x;
      EXPECT_EQ(sum, total) << preset << ", " << ranks << " ranks";
      // Greedy on the rank holding least: none is more than one tensor above an even share.
      EXPECT_LE(*std::max_element(per.begin(), per.end()), total / ranks + largest) << preset << ", " << ranks;
    }
  }
}

TEST(ShardedOptimizer, ShardsUpdateAsOneOptimizerAndHoldItsState) {
  const ModelConfig mc = small_model();
  const OptimConfig oc = small_optim(mc);
  const KernelTable& k = cpu_kernels();
  // One thread: Muon then runs each matrix alike whichever of them an optimizer owns (with more,
  // how the matrices split among threads, and so the GEMMs' thread counts, would differ).
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  ParamArena whole_p(mc), grads(mc);
  init_params(whole_p, 7);
  Optimizer whole(oc, whole_p, k);
  for (int ranks : {2, 3}) {
    const std::vector<int> owners = tensor_owners(whole_p.specs, ranks);
    std::vector<std::unique_ptr<ParamArena>> ps;
    std::vector<std::unique_ptr<Optimizer>> opts;
    size_t state = 0;
    for (int r = 0; r < ranks; ++r) {
      ps.push_back(std::make_unique<ParamArena>(mc));
      init_params(*ps.back(), 7);
      opts.push_back(std::make_unique<Optimizer>(oc, *ps.back(), k, owned_by(owners, r)));
      state += opts.back()->state_bytes();
      EXPECT_LT(opts.back()->state_bytes(), whole.state_bytes()) << "rank " << r << " of " << ranks;
    }
    EXPECT_EQ(state, whole.state_bytes()) << ranks << " ranks";
    ParamArena p(mc);
    init_params(p, 7);
    Optimizer one(oc, p, k);
    for (int s = 0; s < 3; ++s) {
      Rng rng(90 + uint64_t(s));
      for (size_t i = 0; i < grads.numel(); ++i) grads.data.data()[i] = float(rng.normal());
      one.step(p, grads, 1.0, 0.1 * s, 0.0);
      for (int r = 0; r < ranks; ++r) opts[size_t(r)]->step(*ps[size_t(r)], grads, 1.0, 0.1 * s, 0.0);
      // What the owners send: each tensor from its owner, into every rank's copy.
      for (size_t i = 0; i < p.specs.size(); ++i)
        for (int r = 0; r < ranks; ++r)
          std::memcpy(ps[size_t(r)]->tensor(i), ps[size_t(owners[i])]->tensor(i), size_t(p.specs[i].numel()) * 4);
    }
    for (size_t i = 0; i < p.specs.size(); ++i)
      ASSERT_EQ(0, std::memcmp(ps[0]->tensor(i), p.tensor(i), size_t(p.specs[i].numel()) * 4)) << p.specs[i].name;
    // The shards' state, exported into one layout, is the whole optimizer's, bit for bit; and
    // imported back into fresh shards, it exports the same again.
    Buffer<float> m(p.numel()), v(p.numel()), m2(p.numel()), v2(p.numel());
    for (auto& o : opts) o->export_state(p, m.data(), v.data());
    for (int r = 0; r < ranks; ++r) {
      ParamArena fresh(mc);
      Optimizer o(oc, fresh, k, owned_by(owners, r));
      o.import_state(p, m.data(), v.data());
      o.export_state(p, m2.data(), v2.data());
    }
    for (size_t i = 0; i < p.specs.size(); ++i) {
      const size_t off = p.offsets[i], bytes = size_t(p.specs[i].numel()) * 4;
      EXPECT_EQ(0, std::memcmp(m.data() + off, one.m().data() + off, bytes)) << "m of " << p.specs[i].name;
      EXPECT_EQ(0, std::memcmp(v.data() + off, one.v().data() + off, bytes)) << "v of " << p.specs[i].name;
      EXPECT_EQ(0, std::memcmp(m2.data() + off, m.data() + off, bytes)) << "m round trip of " << p.specs[i].name;
      EXPECT_EQ(0, std::memcmp(v2.data() + off, v.data() + off, bytes)) << "v round trip of " << p.specs[i].name;
    }
  }
  omp_set_num_threads(saved);
}

// The memory estimate counts a rank's share of the state, not the whole.
TEST(ShardedOptimizer, StateFloatsCountOnlyTheOwnedTensors) {
  const std::vector<ParamSpec> specs = param_specs(small_model());
  const size_t whole = Optimizer::state_floats(specs, 1);
  const std::vector<int> owners = tensor_owners(specs, 2);
  const size_t a = Optimizer::state_floats(specs, 1, false, owned_by(owners, 0));
  const size_t b = Optimizer::state_floats(specs, 1, false, owned_by(owners, 1));
  EXPECT_LT(a, whole);
  EXPECT_LT(b, whole);
  // The moments divide exactly; each rank keeps Newton-Schulz scratch for its largest matrix.
  EXPECT_GE(a + b, whole);
  EXPECT_LE(std::max(a, b), whole / 2 + whole / 4);
}

}  // namespace
}  // namespace nt
