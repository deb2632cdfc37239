// SPDX-License-Identifier: MIT
#include <cstdlib>
#include <filesystem>

#include "core/check.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_tokenizer.h"

namespace nt {

namespace {

bool is_tiktoken_name(const std::string& s) {
  return s == "gpt2" || s == "r50k_base" || s == "p50k_base" || s == "p50k_edit" || s == "cl100k_base" || s == "o200k_base";
}

// tiktoken's encodings by name: NAME.json from $NT_TIKTOKEN_ENCODERS, else from the npm package
// installed by `npm ci --prefix tools/tiktoken` (relative to the current folder).
std::string find_tiktoken_encoder(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("NT_TIKTOKEN_ENCODERS")) dirs.push_back(env);
  dirs.push_back("tools/tiktoken/node_modules/tiktoken/encoders");
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / (name + ".json");
    if (fs::exists(p)) return p.string();
  }
  fail("--tokenizer %s: encoder file %s.json not found in $NT_TIKTOKEN_ENCODERS or %s (run `npm ci --prefix tools/tiktoken`)",
       name.c_str(), name.c_str(), dirs.back().c_str());
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
  namespace fs = std::filesystem;
  if (spec == "bytes") return std::make_unique<ByteTokenizer>();
  if (is_tiktoken_name(spec) && !fs::exists(spec)) return BpeTokenizer::load(find_tiktoken_encoder(spec));
  if (!fs::exists(spec))
    fail("--tokenizer %s: no such file (expected 'bytes', a .tiktoken file, a tiktoken encoder .json, or gpt2|r50k_base|p50k_base|cl100k_base|o200k_base)",
         spec.c_str());
  return BpeTokenizer::load(spec);
}

std::unique_ptr<Tokenizer> load_tokenizer_in_dir(const std::string& dir, const std::string& spec) {
  if (spec == "bytes") return load_tokenizer(spec);
  return load_tokenizer((std::filesystem::path(dir) / spec).string());
}

}  // namespace nt
