// SPDX-License-Identifier: MIT
// The model's weights as a safetensors file: F32 tensors named as in params.h, the model
// configuration as JSON under metadata key "config".
#pragma once
#include <map>
#include <string>

#include "model/config.h"
#include "model/params.h"

namespace nt {

void save_weights(const std::string& path, const ModelConfig& cfg, const ParamArena& params,
                  const std::map<std::string, std::string>& extra_metadata = {});
// Reads the configuration stored in a weights file.
ModelConfig read_weights_config(const std::string& path);
// Loads weights into params, which must have the file's shapes; errors name the file.
void load_weights(const std::string& path, const ModelConfig& cfg, ParamArena& params);

}  // namespace nt
