// SPDX-License-Identifier: MIT
#include "eval/run_folder.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"
#include "model/weights_io.h"

namespace nt {

RunFolder open_run_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) fail("--run-dir %s: not a directory", dir.c_str());
  RunFolder r;
  r.dir = dir;
  r.weights_path = (fs::path(dir) / "model.safetensors").string();
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  if (!fs::exists(r.weights_path)) fail("%s: missing (the run has not finished or saved its weights)", r.weights_path.c_str());
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(read_file(cfg_path));
  } catch (const nlohmann::json::exception&) {
    fail("%s: not valid JSON", cfg_path.c_str());
  }
  std::string spec;
  try {
    spec = cfg.at("tokenizer").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    fail("%s: has no \"tokenizer\" entry", cfg_path.c_str());
  }
  r.tokenizer = load_tokenizer_in_dir(dir, spec);
  if (cfg.contains("tokenizer_id") && cfg["tokenizer_id"] != to_hex(r.tokenizer->identity()))
    fail("%s: the tokenizer in the run folder does not match the one the model was trained with", cfg_path.c_str());
  r.model = read_weights_config(r.weights_path);
  if (uint32_t(r.model.vocab_size) < r.tokenizer->vocab_size())
    fail("%s: model vocabulary %d is smaller than the tokenizer's %u", r.weights_path.c_str(), r.model.vocab_size,
         r.tokenizer->vocab_size());
  return r;
}

}  // namespace nt
