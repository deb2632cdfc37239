// SPDX-License-Identifier: MIT
// Opening a finished run folder (config.json, model.safetensors, tokenizer) for sample / eval.
#pragma once
#include <memory>
#include <string>

#include "model/config.h"
#include "tokenizer/tokenizer.h"

namespace nt {

struct RunFolder {
  std::string dir, weights_path;
  ModelConfig model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Errors name the missing or broken file.
RunFolder open_run_folder(const std::string& dir);

}  // namespace nt
