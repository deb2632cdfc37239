// SPDX-License-Identifier: MIT
// The model's weights as a safetensors file: F32 tensors named as in params.h, the model
// configuration as JSON under metadata key "config", and "tensors_sha256": the sha256 of every
// tensor's bytes in the parameter table's order, so that a damaged copy is refused on load.
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
// One metadata entry of a weights file ("" where it has none).
std::string read_weights_metadata(const std::string& path, const std::string& key);
// Loads weights into params, which must have the file's shapes, and verifies tensors_sha256 where
// the file has one (files written by other tools may not); errors name the file.
void load_weights(const std::string& path, const ModelConfig& cfg, ParamArena& params);

}  // namespace nt
