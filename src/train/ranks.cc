// SPDX-License-Identifier: MIT
#include "train/ranks.h"

#include <algorithm>

#include "core/files.h"

namespace nt {

CheckpointData shared_checkpoint(dist::Comm& c, const RunFolder& run) {
  if (c.size() == 1) return run.newest_valid_checkpoint();
  std::string path, bytes;
  if (c.rank() == 0) {
    path = run.newest_valid_checkpoint().path;
    bytes = read_file(path);
  }
  dist::broadcast_string(c, path);
  dist::broadcast_string(c, bytes);
  // Every rank verifies its copy (the checksum covers every byte).
  return parse_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

void share_decision(dist::Comm& c, StepDecision& d) {
  if (c.size() > 1) c.broadcast(&d, sizeof d, 0);
}

std::vector<int> tensor_owners(const std::vector<ParamSpec>& specs, int ranks) {
  std::vector<int> owner(specs.size(), 0);
  for (bool matrices : {true, false}) {
    auto cost = [&](size_t i) {
      const ParamSpec& s = specs[i];
      return matrices ? double(s.rows) * double(s.cols) * double(std::min(s.rows, s.cols)) : double(s.numel());
    };
    std::vector<size_t> order;
    for (size_t i = 0; i < specs.size(); ++i)
      if ((specs[i].group == ParamGroup::kMatrix) == matrices) order.push_back(i);
    // Largest first, ties by table order: the same assignment on every rank.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost(a) > cost(b); });
    std::vector<double> load(size_t(ranks), 0.0);
    for (size_t i : order) {
      const size_t r = size_t(std::min_element(load.begin(), load.end()) - load.begin());
      owner[i] = int(r);
      load[r] += cost(i);
    }
  }
  return owner;
}

void share_from_owners(dist::Comm& c, const ParamArena& layout, float* data, const std::vector<int>& owners) {
  for (size_t i = 0; i < layout.specs.size(); ++i)
    c.broadcast(data + layout.offsets[i], size_t(layout.specs[i].numel()) * sizeof(float), owners[i]);
}

}  // namespace nt
