// SPDX-License-Identifier: MIT
// `nanotrain data prepare`: turn text into token shards.
#include <cstdio>

#include "cli/commands.h"
#include "data/prepare.h"

namespace nt::cli {

void add_data_command(CLI::App& app) {
  auto* data = app.add_subcommand("data", "Prepare training data (token shards)");
  data->require_subcommand(1);

  auto opt = std::make_shared<PrepareOptions>();
  auto* prep = data->add_subcommand("prepare", "Tokenize text files / folders / JSONL into train and validation shards");
  prep->add_option("--input", opt->inputs, "Text files (one document each), folders of them, or .jsonl files")->required();
  prep->add_option("--val-input", opt->val_inputs, "Separate validation text (default: hold out --val-frac of the documents)");
  prep->add_option("--val-frac", opt->val_frac, "Fraction of documents held out for validation (deterministic)")->capture_default_str();
  prep->add_option("--tokenizer", opt->tokenizer, "'bytes' or a tokenizer file")->capture_default_str();
  prep->add_option("--jsonl-field", opt->docs.jsonl_field, "JSONL field holding the text")->capture_default_str();
  prep->add_option("--out", opt->out, "Output folder")->required();
  prep->callback([opt] {
    PrepareStats st = prepare_data(*opt);
    std::printf("wrote %s: train %zu docs, %llu tokens (%llu bytes); val %zu docs, %llu tokens (%llu bytes) in %.2fs\n",
                opt->out.c_str(), st.train_docs, (unsigned long long)st.train_tokens,
                (unsigned long long)st.train_bytes, st.val_docs, (unsigned long long)st.val_tokens,
                (unsigned long long)st.val_bytes, st.seconds);
  });
}

}  // namespace nt::cli
