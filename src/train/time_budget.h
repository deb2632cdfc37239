// SPDX-License-Identifier: MIT
// The training-time budget: charged only with train steps (data, forward, backward, optimizer);
// evaluation, sampling and saving are not charged. It predicts the next step's duration from the
// recent ones so that no step starts that would end after the budget.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

namespace nt {

class TimeBudget {
 public:
  // budget_s <= 0: unlimited (step-count runs).
  explicit TimeBudget(double budget_s) : budget_(budget_s) {}
  void charge(double step_seconds);
  double used() const { return used_; }
  double budget() const { return budget_; }
  // Fraction of the budget used, in [0, 1].
  double progress() const;
  // True if the next step, predicted from the recent ones, would end past the budget.
  bool next_step_would_overrun() const;
  double predicted_step() const;
  // For checkpoints: the recent step durations, and restoring both.
  std::vector<double> recent() const { return {recent_.begin(), recent_.end()}; }
  void restore(double used, const std::vector<double>& recent) {
    used_ = used;
    recent_.assign(recent.begin(), recent.end());
  }

 private:
  double budget_;
  double used_ = 0;
  std::deque<double> recent_;
};

}  // namespace nt
