// SPDX-License-Identifier: MIT
#include "data/dataset.h"

#include <nlohmann/json.hpp>
#include <filesystem>

#include "core/check.h"
#include "core/files.h"

namespace nt {

Dataset open_dataset(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string meta_path = (fs::path(dir) / "data.json").string();
  if (!fs::is_directory(dir)) fail("--data %s: not a directory (run `nanotrain data prepare` first)", dir.c_str());
  if (!fs::exists(meta_path)) fail("%s: missing (run `nanotrain data prepare --out %s`)", meta_path.c_str(), dir.c_str());
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(read_file(meta_path));
  } catch (const nlohmann::json::exception& e) {
    fail("%s: not valid JSON: %s", meta_path.c_str(), e.what());
  }
  Dataset ds;
  ds.dir = dir;
  try {
    if (meta.at("format").get<std::string>() != "nanotrain-data") fail("%s: not a nanotrain data folder", meta_path.c_str());
    ds.tokenizer_spec = meta.at("tokenizer").get<std::string>();
    ds.tokenizer = load_tokenizer_in_dir(dir, ds.tokenizer_spec);
    if (meta.at("tokenizer_id").get<std::string>() != to_hex(ds.tokenizer->identity()))
      fail("%s: tokenizer id does not match the tokenizer file %s", meta_path.c_str(), ds.tokenizer_spec.c_str());
    const Digest id = ds.tokenizer->identity();
    for (const auto& name : meta.at("train_shards"))
      ds.train.push_back(std::make_unique<Shard>((fs::path(dir) / name.get<std::string>()).string(), &id));
    for (const auto& name : meta.at("val_shards"))
      ds.val.push_back(std::make_unique<Shard>((fs::path(dir) / name.get<std::string>()).string(), &id));
  } catch (const nlohmann::json::exception& e) {
    fail("%s: malformed: %s", meta_path.c_str(), e.what());
  }
  if (ds.train.empty()) fail("%s: lists no training shards", meta_path.c_str());
  if (ds.val.empty()) fail("%s: lists no validation shards", meta_path.c_str());
  return ds;
}

}  // namespace nt
