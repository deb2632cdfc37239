// SPDX-License-Identifier: MIT
#include "train/train_config.h"

#include "core/check.h"
#include "core/duration.h"

namespace nt {

nlohmann::json TrainConfig::to_json() const { return fields_to_json(*this); }

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  try {
    fields_from_json(c, j);
  } catch (const nlohmann::json::exception& e) {
    fail("training configuration: %s", e.what());
  }
  return c;
}

void TrainConfig::validate() const {
  validate_fields(*this);
  schedule.validate();
  if (steps == 0 && !parse_duration(time_budget))
    fail("--time-budget %s: expected a positive duration such as 90s, 5m, 1h", time_budget.c_str());
  if (core_every != "0" && core_bundle.empty())
    fail("--core-every %s: needs --core-bundle (the bundle to evaluate)", core_every.c_str());
}

}  // namespace nt
