// SPDX-License-Identifier: MIT
#include "train/step_timing.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "model/gpt.h"
#include "model/params.h"
#include "optim/optimizer.h"
#include "profile/profile.h"

namespace nt {

std::vector<double> TimedSteps::step_s() const {
  std::vector<double> s(forward_backward_s.size());
  for (size_t i = 0; i < s.size(); ++i) s[i] = forward_backward_s[i] + optimizer_s[i];
  return s;
}

TimedSteps time_training_steps(const ModelConfig& c, const KernelTable& k, Precision prec, const OptimConfig& oc,
                               int batch, int steps, const std::function<void()>& after_warmup) {
  using Clock = std::chrono::steady_clock;
  const int T = c.seq_len;
  Gpt model(c, k, batch, T, prec);
  init_params(model.params(), 1);
  Optimizer opt(oc, model.params(), k);
  std::vector<int32_t> x(size_t(batch) * T), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t((i * 2654435761u) % uint32_t(c.vocab_size));
  for (size_t i = 0; i < y.size(); ++i) y[i] = x[(i + 1) % x.size()];
  TimedSteps r;
  for (int s = 0; s <= steps; ++s) {
    if (s == 1 && after_warmup) after_warmup();
    profile::Zone zs(profile::kStep);
    const auto t0 = Clock::now();
    model.forward_backward(x.data(), y.data(), batch, T, 1.0, false);  // overwrites the gradients
    const auto t1 = Clock::now();
    {
      profile::Zone z(profile::kOptimizer);
      opt.step(model.params(), model.grads(), 1.0);
    }
    if (s == 0) continue;  // the warm-up
    r.forward_backward_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    r.optimizer_s.push_back(std::chrono::duration<double>(Clock::now() - t1).count());
  }
  return r;
}

double median(std::vector<double> v) {
  NT_CHECK(!v.empty(), "the median of no values");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace nt
