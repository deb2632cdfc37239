// SPDX-License-Identifier: MIT
#include "model/weights_io.h"

#include <cstring>

#include "core/check.h"
#include "core/json_limits.h"
#include "core/sha256.h"
#include "model/safetensors.h"

namespace nt {

namespace {
constexpr const char* kTensorsSha256 = "tensors_sha256";
}  // namespace

void save_weights(const std::string& path, const ModelConfig& cfg, const ParamArena& params,
                  const std::map<std::string, std::string>& extra) {
  StFile f;
  f.metadata = extra;
  f.metadata["config"] = cfg.to_json().dump();
  f.metadata["format"] = "nanotrain-gpt";
  Sha256 sum;
  for (size_t i = 0; i < params.specs.size(); ++i) {
    const auto& s = params.specs[i];
    f.tensors[s.name] = st_f32(params.tensor(i), s.shape());
    sum.update(params.tensor(i), size_t(s.numel()) * sizeof(float));
  }
  f.metadata[kTensorsSha256] = to_hex(sum.finish());
  save_safetensors(path, f);
}

static ModelConfig config_of(const StFile& f, const std::string& path) {
  auto it = f.metadata.find("config");
  if (it == f.metadata.end()) fail("%s: no model config in the safetensors metadata", path.c_str());
  try {
    return ModelConfig::from_json(parse_json(it->second, "its config metadata"));
  } catch (const nlohmann::json::exception& e) {
    fail("%s: model config is not valid JSON", path.c_str());
  } catch (const Error& e) {
    fail("%s: %s", path.c_str(), e.what());
  }
}

ModelConfig read_weights_config(const std::string& path) { return config_of(load_safetensors(path), path); }

std::string read_weights_metadata(const std::string& path, const std::string& key) {
  const StFile f = load_safetensors(path);
  const auto it = f.metadata.find(key);
  return it == f.metadata.end() ? "" : it->second;
}

void load_weights(const std::string& path, const ModelConfig& cfg, ParamArena& params) {
  StFile f = load_safetensors(path);
  Sha256 sum;
  for (size_t i = 0; i < params.specs.size(); ++i) {
    const auto& s = params.specs[i];
    auto it = f.tensors.find(s.name);
    if (it == f.tensors.end()) fail("%s: missing tensor %s", path.c_str(), s.name.c_str());
    const StTensor& t = it->second;
    if (t.dtype != "F32" || t.shape != s.shape())
      fail("%s: tensor %s has dtype %s and a shape other than the model's (%lld, %lld)", path.c_str(),
           s.name.c_str(), t.dtype.c_str(), (long long)s.rows, (long long)s.cols);
    std::memcpy(params.tensor(i), t.bytes.data(), t.bytes.size());
    sum.update(t.bytes.data(), t.bytes.size());
  }
  const auto want = f.metadata.find(kTensorsSha256);
  if (want != f.metadata.end() && want->second != to_hex(sum.finish()))
    fail("%s: damaged (its tensors do not match the checksum in its metadata)", path.c_str());
  (void)cfg;
}

}  // namespace nt
