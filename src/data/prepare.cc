// SPDX-License-Identifier: MIT
#include "data/prepare.h"

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"
#include "data/progress.h"
#include "data/shard_format.h"
#include "tokenizer/tokenizer.h"

namespace nt {

namespace {

namespace fs = std::filesystem;

// Tokenizes docs in parallel blocks and writes PREFIX_00000.bin, PREFIX_00001.bin, ...; returns
// the shard file names.
std::vector<std::string> write_shards(const Tokenizer& tok, const std::vector<std::string>& docs, const std::string& dir,
                                      const std::string& prefix, const PrepareOptions& opt, ProgressLine& progress,
                                      uint64_t* tokens, uint64_t* bytes) {
  std::vector<std::string> names;
  std::unique_ptr<ShardWriter> w;
  auto open_next = [&] {
    if (w) w->finish();
    names.push_back(strf("%s_%05zu.bin", prefix.c_str(), names.size()));
    w = std::make_unique<ShardWriter>((fs::path(dir) / names.back()).string(), tok.vocab_size(), tok.bos_id(), tok.identity());
  };
  open_next();
  const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  constexpr size_t kBlockBytes = size_t(64) << 20;
  std::vector<std::vector<uint32_t>> ids;
  for (size_t begin = 0; begin < docs.size();) {
    size_t end = begin, block = 0;
    while (end < docs.size() && (end == begin || block < kBlockBytes)) block += docs[end++].size();
    ids.assign(end - begin, {});
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (size_t i = begin; i < end; ++i) {
      tok.encode(docs[i], ids[i - begin]);
      progress.add(docs[i].size());
    }
    for (size_t i = begin; i < end; ++i) {
      if (w->token_count() > 0 && w->token_count() + ids[i - begin].size() + 1 > opt.max_shard_tokens) open_next();
      w->add_document(ids[i - begin]);
      *tokens += ids[i - begin].size() + 1;
      *bytes += docs[i].size();
    }
    begin = end;
  }
  w->finish();
  return names;
}

}  // namespace

PrepareStats prepare_data(const PrepareOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.inputs.empty()) fail("--input: at least one file or folder is required");
  if (!(opt.val_frac > 0 && opt.val_frac < 1)) fail("--val-frac %g: must be in (0, 1)", opt.val_frac);
  if (opt.out.empty()) fail("--out: an output folder is required");
  if (opt.max_shard_tokens < 2) fail("--max-shard-tokens: must be at least 2");
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
  uint64_t total = 0;
  for (const auto& d : train) total += d.size();
  for (const auto& d : val) total += d.size();
  std::vector<std::string> train_names, val_names;
  {
    ProgressLine progress("tokenizing", total, "MB", !opt.quiet);
    train_names = write_shards(*tok, train, opt.out, "train", opt, progress, &st.train_tokens, &st.train_bytes);
    val_names = write_shards(*tok, val, opt.out, "val", opt, progress, &st.val_tokens, &st.val_bytes);
    progress.finish();
  }
  st.train_shards = train_names.size();
  st.val_shards = val_names.size();

  nlohmann::json meta = {
      {"format", "nanotrain-data"}, {"version", 1},
      {"tokenizer", spec}, {"tokenizer_id", to_hex(tok->identity())},
      {"vocab_size", tok->vocab_size()}, {"bos_id", tok->bos_id()},
      {"train_shards", train_names}, {"val_shards", val_names},
      {"train_docs", st.train_docs}, {"val_docs", st.val_docs},
      {"train_tokens", st.train_tokens}, {"val_tokens", st.val_tokens},
      {"train_bytes", st.train_bytes}, {"val_bytes", st.val_bytes},
  };
  write_file_atomic((fs::path(opt.out) / "data.json").string(), meta.dump(2) + "\n");
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace nt
