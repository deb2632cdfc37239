// SPDX-License-Identifier: MIT
#include "data/prepare.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"
#include "data/shard_format.h"
#include "tokenizer/tokenizer.h"

namespace nt {

namespace {

uint64_t write_shard(const Tokenizer& tok, const std::vector<std::string>& docs, const std::string& path,
                     uint64_t* bytes) {
  ShardWriter w(path, tok.vocab_size(), tok.bos_id(), tok.identity());
  std::vector<uint32_t> ids;
  for (const auto& d : docs) {
    ids.clear();
    tok.encode(d, ids);
    w.add_document(ids);
    *bytes += d.size();
  }
  w.finish();
  return w.token_count();
}

}  // namespace

PrepareStats prepare_data(const PrepareOptions& opt) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.inputs.empty()) fail("--input: at least one file or folder is required");
  if (!(opt.val_frac > 0 && opt.val_frac < 1)) fail("--val-frac %g: must be in (0, 1)", opt.val_frac);
  if (opt.out.empty()) fail("--out: an output folder is required");
  auto tok = load_tokenizer(opt.tokenizer);

  std::vector<std::string> train, val;
  read_documents(opt.inputs, opt.docs, train);
  if (opt.val_inputs.empty()) {
    split_documents(train, opt.val_frac, val);
  } else {
    read_documents(opt.val_inputs, opt.docs, val);
  }
  if (train.empty()) fail("--input: no training text found");
  if (val.empty()) fail("--val-input: no validation text found");

  make_dirs(opt.out);
  const std::string spec = tok->save_to_dir(opt.out);
  PrepareStats st;
  st.train_docs = train.size();
  st.val_docs = val.size();
  st.train_tokens = write_shard(*tok, train, (fs::path(opt.out) / "train_00000.bin").string(), &st.train_bytes);
  st.val_tokens = write_shard(*tok, val, (fs::path(opt.out) / "val_00000.bin").string(), &st.val_bytes);

  nlohmann::json meta = {
      {"format", "nanotrain-data"}, {"version", 1},
      {"tokenizer", spec}, {"tokenizer_id", to_hex(tok->identity())},
      {"vocab_size", tok->vocab_size()}, {"bos_id", tok->bos_id()},
      {"train_shards", {"train_00000.bin"}}, {"val_shards", {"val_00000.bin"}},
      {"train_docs", st.train_docs}, {"val_docs", st.val_docs},
      {"train_tokens", st.train_tokens}, {"val_tokens", st.val_tokens},
      {"train_bytes", st.train_bytes}, {"val_bytes", st.val_bytes},
  };
  write_file_atomic((fs::path(opt.out) / "data.json").string(), meta.dump(2) + "\n");
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace nt
