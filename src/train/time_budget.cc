// SPDX-License-Identifier: MIT
#include "train/time_budget.h"

#include <algorithm>

namespace nt {

void TimeBudget::charge(double s) {
  used_ += s;
  recent_.push_back(s);
  if (recent_.size() > 5) recent_.pop_front();
}

double TimeBudget::progress() const { return budget_ > 0 ? std::clamp(used_ / budget_, 0.0, 1.0) : 0.0; }

double TimeBudget::predicted_step() const {
  if (recent_.empty()) return 0;
  // The mean of the last few steps: robust to one slow step, quick to follow a real change.
  double s = 0;
  for (double r : recent_) s += r;
  return s / double(recent_.size());
}

bool TimeBudget::next_step_would_overrun() const {
  if (budget_ <= 0) return false;
  if (used_ >= budget_) return true;
  return used_ + predicted_step() > budget_;
}

}  // namespace nt
