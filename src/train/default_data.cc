// SPDX-License-Identifier: MIT
#include "train/default_data.h"

#include <cstdio>
#include <filesystem>

#include "core/files.h"
#include "data/corpus.h"
#include "data/documents.h"
#include "data/prepare.h"
#include "tokenizer/bpe_train.h"

namespace nt {

std::string ensure_default_data(bool quiet) {
  namespace fs = std::filesystem;
  const std::string dir = kDefaultDataDir;
  if (fs::exists(fs::path(dir) / "data.json")) return dir;
  if (!quiet) std::fprintf(stderr, "preparing the default data in %s (first run only)\n", dir.c_str());
  FetchOptions fo;
  fo.quiet = quiet;
  fetch_default_corpus(fo);
  const std::string tok_path = "data/tok8192.tiktoken";
  if (!fs::exists(tok_path)) {
    std::vector<std::string> docs;
    read_documents({fo.out + "/train.jsonl"}, DocumentOptions{}, docs);
    BpeTrainOptions bo;
    bo.vocab_size = 8192;
    train_bpe(docs, bo)->save(tok_path);
  }
  PrepareOptions po;
  po.inputs = {fo.out + "/train.jsonl"};
  po.val_inputs = {fo.out + "/val.jsonl"};
  po.tokenizer = tok_path;
  po.out = dir;
  po.quiet = quiet;
  prepare_data(po);
  return dir;
}

}  // namespace nt
