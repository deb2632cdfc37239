// SPDX-License-Identifier: MIT
#include "data/dataset.h"

#include <nlohmann/json.hpp>
#include <filesystem>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"

namespace nt {

namespace {

namespace fs = std::filesystem;

// A name from data.json: a relative path that stays inside the folder.
std::string inside(const std::string& dir, const nlohmann::json& name, const std::string& meta_path) {
  const std::string n = name.get<std::string>();
  const fs::path p(n);
  bool ok = !n.empty() && p.is_relative();
  for (const auto& part : p) ok = ok && part != ".." && part != ".";
  if (!ok) fail("%s: \"%s\" is not a path inside the data folder", meta_path.c_str(), n.c_str());
  return (fs::path(dir) / p).string();
}

// Opens the shards a split lists and checks data.json's counts for it against them.
void open_split(const std::string& dir, const nlohmann::json& meta, const std::string& meta_path, const char* split,
                const ShardExpect& expect, std::vector<std::unique_ptr<Shard>>& out) {
  uint64_t tokens = 0, docs = 0;
  for (const auto& name : meta.at(std::string(split) + "_shards")) {
    out.push_back(std::make_unique<Shard>(inside(dir, name, meta_path), &expect));
    tokens += out.back()->header().token_count;
    docs += out.back()->header().doc_count;
  }
  const uint64_t want_tokens = meta.at(std::string(split) + "_tokens").get<uint64_t>();
  const uint64_t want_docs = meta.at(std::string(split) + "_docs").get<uint64_t>();
  if (tokens != want_tokens || docs != want_docs)
    fail("%s: says %llu %s tokens in %llu documents, its shards hold %llu in %llu", meta_path.c_str(),
         (unsigned long long)want_tokens, split, (unsigned long long)want_docs, (unsigned long long)tokens,
         (unsigned long long)docs);
}

}  // namespace

Dataset open_dataset(const std::string& dir) {
  const std::string meta_path = (fs::path(dir) / "data.json").string();
  if (!fs::is_directory(dir)) fail("--data %s: not a directory (run `nanotrain data prepare` first)", dir.c_str());
  if (!fs::exists(meta_path)) fail("%s: missing (run `nanotrain data prepare --out %s`)", meta_path.c_str(), dir.c_str());
  nlohmann::json meta;
  try {
    meta = read_json_file(meta_path);
  } catch (const nlohmann::json::exception& e) {
    fail("%s: not valid JSON: %s", meta_path.c_str(), e.what());
  }
  Dataset ds;
  ds.dir = dir;
  try {
    if (meta.at("format").get<std::string>() != "nanotrain-data") fail("%s: not a nanotrain data folder", meta_path.c_str());
    if (meta.at("version").get<int>() != kDataVersion)
      fail("%s: data folder version %d is not supported (expected %d); re-run `nanotrain data prepare`",
           meta_path.c_str(), meta.at("version").get<int>(), kDataVersion);
    ds.tokenizer_spec = meta.at("tokenizer").get<std::string>();
    if (ds.tokenizer_spec != "bytes") inside(dir, meta.at("tokenizer"), meta_path);
    ds.tokenizer = load_tokenizer_in_dir(dir, ds.tokenizer_spec);
    const Tokenizer& tok = *ds.tokenizer;
    if (meta.at("tokenizer_id").get<std::string>() != to_hex(tok.identity()))
      fail("%s: tokenizer id does not match the tokenizer file %s", meta_path.c_str(), ds.tokenizer_spec.c_str());
    if (meta.at("vocab_size").get<int64_t>() != tok.vocab_size() || meta.at("bos_id").get<int64_t>() != tok.bos_id())
      fail("%s: vocab_size / bos_id do not match the tokenizer file %s", meta_path.c_str(), ds.tokenizer_spec.c_str());
    const ShardExpect expect{tok.identity(), uint32_t(tok.vocab_size()), uint32_t(tok.bos_id())};
    open_split(dir, meta, meta_path, "train", expect, ds.train);
    open_split(dir, meta, meta_path, "val", expect, ds.val);
  } catch (const nlohmann::json::exception& e) {
    fail("%s: malformed: %s", meta_path.c_str(), e.what());
  }
  if (ds.train.empty()) fail("%s: lists no training shards", meta_path.c_str());
  if (ds.val.empty()) fail("%s: lists no validation shards", meta_path.c_str());
  return ds;
}

}  // namespace nt
