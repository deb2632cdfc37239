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
  std::vector<double> state(size_t(ranks), 0.0);  // elements of state each rank holds so far
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
    std::vector<double> work(size_t(ranks), 0.0);
    std::vector<double>& load = matrices ? work : state;
    for (size_t i : order) {
      const size_t r = size_t(std::min_element(load.begin(), load.end()) - load.begin());
      owner[i] = int(r);
      if (matrices) work[r] += cost(i);
      state[r] += double(specs[i].numel());
    }
  }
  return owner;
}

std::vector<bool> owned_by(const std::vector<int>& owners, int rank) {
  std::vector<bool> mine;
  for (int o : owners) mine.push_back(o == rank);
  return mine;
}

void gather_state(dist::Comm& c, const ParamArena& layout, const Optimizer& opt, const std::vector<int>& owners,
                  float* m, float* v) {
  if (c.rank() == 0) opt.export_state(layout, m, v);
  // Tensor by tensor in table order: rank 0 receives in the order each owner sends.
  for (size_t i = 0; i < layout.specs.size(); ++i) {
    const size_t bytes = size_t(layout.specs[i].numel()) * sizeof(float);
    if (owners[i] == 0) continue;
    if (c.rank() == 0) {
      c.recv(m + layout.offsets[i], bytes, owners[i]);
      c.recv(v + layout.offsets[i], bytes, owners[i]);
    } else if (c.rank() == owners[i]) {
      c.send(opt.m_of(i), bytes, 0);
      c.send(opt.v_of(i), bytes, 0);
    }
  }
}

OwnerSum::OwnerSum(dist::Comm& c, ParamArena& grads, const std::vector<int>& owners)
    : c_(c), grads_(grads), owners_(owners), started_(grads.specs.size(), false) {}

void OwnerSum::start(size_t i) {
  if (started_[i]) return;
  started_[i] = true;
  c_.start_sum_to(grads_.tensor(i), size_t(grads_.specs[i].numel()), owners_[i]);
}

void OwnerSum::layer_done(int layer) {
  if (c_.size() == 1) return;
  for (size_t i = 0; i < grads_.specs.size(); ++i)
    if (grads_.specs[i].layer == layer || grads_.specs[i].group == ParamGroup::kHead) start(i);
  c_.poll_sums();
}

void OwnerSum::finish() {
  if (c_.size() == 1) return;
  for (size_t i = 0; i < grads_.specs.size(); ++i) start(i);
  c_.finish_sums();
  std::fill(started_.begin(), started_.end(), false);
}

void share_from_owners(dist::Comm& c, const ParamArena& layout, float* data, const std::vector<int>& owners) {
  for (size_t i = 0; i < layout.specs.size(); ++i)
    c.broadcast(data + layout.offsets[i], size_t(layout.specs[i].numel()) * sizeof(float), owners[i]);
}

}  // namespace nt
