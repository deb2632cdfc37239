// SPDX-License-Identifier: MIT
#include "experiment/run_estimate.h"

#include <filesystem>
#include <map>
#include <memory>

#include "core/check.h"
#include "data/dataset.h"
#include "train/train_plan.h"

namespace nt::experiment {

std::vector<RunEstimate> estimate_runs(const std::vector<TrainConfig>& cfgs) {
  std::map<std::string, std::shared_ptr<Dataset>> data;
  std::map<std::string, std::string> data_error;
  std::vector<RunEstimate> out;
  for (const TrainConfig& cfg : cfgs) {
    RunEstimate e;
    try {
      TrainPlan p = plan_settings(cfg);
      if (!data.count(cfg.data_dir) && !data_error.count(cfg.data_dir)) {
        if (!std::filesystem::exists(std::filesystem::path(cfg.data_dir) / "data.json")) {
          data_error[cfg.data_dir] = cfg.data_dir + ": not prepared yet (the run prepares the default data itself)";
        } else {
          try {
            data[cfg.data_dir] = std::make_shared<Dataset>(open_dataset(cfg.data_dir));
          } catch (const Error& err) {
            data_error[cfg.data_dir] = err.what();
          }
        }
      }
      if (data_error.count(cfg.data_dir)) fail("%s", data_error[cfg.data_dir].c_str());
      plan_model(p, *data[cfg.data_dir]->tokenizer);
      e.params = p.n_params, e.memory_bytes = p.memory.need(), e.flops_per_token = p.flops_per_token;
      e.step_tokens = p.step_tokens;
    } catch (const std::exception& err) {
      e.error = err.what();
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace nt::experiment
