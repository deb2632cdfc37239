// SPDX-License-Identifier: MIT
#include "train/step_timing.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/check.h"
#include "model/gpt.h"
#include "model/params.h"
#include "optim/optimizer.h"
#include "profile/profile.h"
#include "train/ranks.h"

namespace nt {

std::vector<double> TimedSteps::step_s() const {
  std::vector<double> s(forward_backward_s.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = forward_backward_s[i] + optimizer_s[i] + comm_s[i];
  return s;
}

TimedSteps time_training_steps(const ModelConfig& c, const KernelTable& k, Precision prec, const OptimConfig& oc,
                               int batch, int steps, const std::function<void()>& after_warmup, dist::Comm* comm,
                               bool overlap) {
  using Clock = std::chrono::steady_clock;
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  if (batch % ranks != 0) fail("%d sequences a step do not divide among %d ranks", batch, ranks);
  const int T = c.seq_len, mine = batch / ranks;
  const std::vector<int> owners = ranks > 1 ? tensor_owners(param_specs(c), ranks) : std::vector<int>{};
  Gpt model(c, k, mine, T, prec);
  init_params(model.params(), 1);
  Optimizer opt(oc, model.params(), k, owned_by(owners, rank));
  // Each rank its own rows of one fixed batch.
  std::vector<int32_t> x(size_t(mine) * T), y(x.size());
  const size_t first = size_t(rank) * x.size(), all = size_t(batch) * T;
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t(((first + i) * 2654435761u) % uint32_t(c.vocab_size));
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = int32_t((((first + i + 1) % all) * 2654435761u) % uint32_t(c.vocab_size));
  TimedSteps r;
  for (int s = 0; s <= steps; ++s) {
    if (comm) comm->barrier();  // every rank's step starts together
    if (s == 1 && after_warmup) after_warmup();
    profile::Zone zs(profile::kStep);
    std::optional<OwnerSum> sum;
    if (ranks > 1) sum.emplace(*comm, model.grads(), owners);
    const double comm0 = comm ? comm->busy_seconds() : 0.0;
    const auto t0 = Clock::now();
    {
      const LayerDoneHook hook(model, overlap && sum ? &*sum : nullptr);
      model.forward_backward(x.data(), y.data(), mine, T, 1.0, false);  // overwrites the gradients
    }
    const auto t1 = Clock::now();
    const double in_backward = comm ? comm->busy_seconds() - comm0 : 0.0;  // the sums' polls
    double waited = 0;
    if (sum && !overlap) {  // the ranks' imbalance, kept apart from the sum's transfer
      const double w0 = comm->busy_seconds();
      comm->barrier();
      waited = comm->busy_seconds() - w0;
    }
    {
      profile::Zone z(profile::kOptimizer);
      if (sum) sum->finish();
      opt.step(model.params(), model.grads(), 1.0);
      if (ranks > 1) share_from_owners(*comm, model.params(), model.params().data.data(), owners);
    }
    const double in_comm = comm ? comm->busy_seconds() - comm0 : 0.0;
    if (s == 0) continue;  // the warm-up
    r.forward_backward_s.push_back(std::chrono::duration<double>(t1 - t0).count() - in_backward);
    r.optimizer_s.push_back(std::chrono::duration<double>(Clock::now() - t1).count() - (in_comm - in_backward));
    r.comm_s.push_back(in_comm);
    r.wait_s.push_back(waited);
  }
  return r;
}

double median(std::vector<double> v) {
  NT_CHECK(!v.empty(), "the median of no values");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace nt
