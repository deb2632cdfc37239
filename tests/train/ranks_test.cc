// SPDX-License-Identifier: MIT
// The sharded optimizer's owners: every tensor has one owner among the ranks, the matrices'
// Newton-Schulz work is spread evenly, and the assignment is the same wherever it is computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "model/config.h"
#include "model/params.h"
#include "train/ranks.h"

namespace nt {
namespace {

double ns_cost(const ParamSpec& s) { return double(s.rows) * double(s.cols) * double(std::min(s.rows, s.cols)); }

TEST(TensorOwners, EveryTensorHasOneOwnerAndTheWorkIsSpread) {
  ShapeFlags f;
  f.preset = "cpu";
  const std::vector<ParamSpec> specs = param_specs(resolve_model_config(f, 8192));
  for (int ranks : {1, 2, 3, 5}) {
    const std::vector<int> owners = tensor_owners(specs, ranks);
    ASSERT_EQ(owners.size(), specs.size());
    std::vector<double> load(size_t(ranks), 0.0);
    double largest = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      ASSERT_GE(owners[i], 0);
      ASSERT_LT(owners[i], ranks);
      if (specs[i].group != ParamGroup::kMatrix) continue;
      load[size_t(owners[i])] += ns_cost(specs[i]);
      largest = std::max(largest, ns_cost(specs[i]));
    }
    // Greedy on the least loaded rank: no two ranks differ by more than one matrix's work.
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, largest) << ranks << " ranks";
    if (ranks > 1) {
      EXPECT_GT(*lo, 0.0) << ranks << " ranks: a rank without matrices";
    }
    EXPECT_EQ(owners, tensor_owners(specs, ranks));
  }
}

}  // namespace
}  // namespace nt
