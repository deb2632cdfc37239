// SPDX-License-Identifier: MIT
#include "train/time_budget.h"

#include <algorithm>
#include <vector>

namespace nt {

void TimeBudget::charge(double s) {
  used_ += s;
  recent_.push_back(s);
  if (recent_.size() > 5) recent_.pop_front();
}

double TimeBudget::progress() const { return budget_ > 0 ? std::clamp(used_ / budget_, 0.0, 1.0) : 0.0; }

double TimeBudget::predicted_step() const {
  if (recent_.empty()) return 0;
  // The median of the last few steps: a single slow step (a noisy neighbour) neither ends the
  // run early nor lets it overrun, and a real change is followed within a few steps.
  std::vector<double> v(recent_.begin(), recent_.end());
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

bool TimeBudget::next_step_would_overrun() const {
  if (budget_ <= 0) return false;
  if (used_ >= budget_) return true;
  return used_ + predicted_step() > budget_;
}

}  // namespace nt
