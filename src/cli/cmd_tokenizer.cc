// SPDX-License-Identifier: MIT
// `nanotrain tokenizer train|encode|decode`: train a byte-level BPE tokenizer, and use any
// tokenizer (a trained .tiktoken, tiktoken's encodings, or bytes) on text.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/check.h"
#include "core/first_error.h"
#include "core/files.h"
#include "data/documents.h"
#include "data/progress.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/tokenizer.h"
#include "train/run_folder.h"

namespace nt::cli {

namespace {

std::string read_input(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  return read_file(path);
}

// Documents of a .jsonl file (field `field`), or the whole file as one text.
std::vector<std::string> read_texts(const std::string& path, const std::string& field) {
  if (path.size() > 6 && path.ends_with(".jsonl")) {
    DocumentOptions o;
    o.jsonl_field = field;
    std::vector<std::string> docs;
    read_documents({path}, o, docs);
    return docs;
  }
  return {read_input(path)};
}

struct TrainArgs {
  std::vector<std::string> inputs;
  std::string out, pattern = kDefaultSplitPattern, name = "nanotrain-bpe", jsonl_field = "text";
  uint32_t vocab_size = 8192;
  int threads = 0;
};

struct EncodeArgs {
  std::string tokenizer, run_dir, input = "-", text, jsonl_field = "text";
  bool bench = false, count = false, json = false;
  int threads = 0, repeat = 3;
  double max_mb = 0;
};

struct DecodeArgs {
  std::string tokenizer, input = "-", ids;
};

void run_train(const TrainArgs& a) {
  if (a.threads > 0) omp_set_num_threads(a.threads);
  DocumentOptions o;
  o.jsonl_field = a.jsonl_field;
  std::vector<std::string> docs;
  read_documents(a.inputs, o, docs);
  if (docs.empty()) fail("--input: no text found");
  BpeTrainOptions opt;
  opt.vocab_size = a.vocab_size;
  opt.pattern = a.pattern;
  opt.name = a.name;
  ProgressLine progress("merges", a.vocab_size > 265 ? a.vocab_size - 265 : 0, "");
  opt.on_merge = [&](uint32_t, uint32_t) { progress.add(1); };
  BpeTrainStats st;
  auto tok = train_bpe(docs, opt, &st);
  progress.finish();
  tok->save(a.out);
  std::printf("wrote %s (+ .json): vocab %u (%u merges + %zu special), %llu docs, %.1f MB, %llu unique pieces; split %.2fs, merges %.2fs\n",
              a.out.c_str(), tok->vocab_size(), st.merges, tok->specials().size(), (unsigned long long)docs.size(),
              double(st.bytes) / 1e6, (unsigned long long)st.unique_pieces, st.split_seconds, st.merge_seconds);
  if (tok->vocab_size() < a.vocab_size)
    std::printf("note: the text has too few distinct pairs for --vocab-size %u; the vocabulary stopped at %u\n", a.vocab_size,
                tok->vocab_size());
}

// --json: the input is one JSON array of strings; prints {"bos": id, "ids": [ids of each string]}
// (every string encoded, empty ones included: tools drive the tokenizer this way).
void run_encode_json(const Tokenizer& tok, const std::string& input) {
  nlohmann::json in;
  try {
    in = nlohmann::json::parse(read_input(input));
  } catch (const nlohmann::json::exception&) {
    fail("--input %s: not valid JSON", input.c_str());
  }
  if (!in.is_array()) fail("--input %s: must be a JSON array of strings", input.c_str());
  nlohmann::json out = nlohmann::json::array();
  std::vector<uint32_t> ids;
  for (const auto& t : in) {
    if (!t.is_string()) fail("--input %s: must be a JSON array of strings", input.c_str());
    ids.clear();
    tok.encode(t.get<std::string>(), ids);
    out.push_back(ids);
  }
  std::printf("%s\n", nlohmann::json{{"bos", tok.bos_id()}, {"ids", out}}.dump().c_str());
}

void run_encode(const EncodeArgs& a) {
  if (a.tokenizer.empty() == a.run_dir.empty()) fail("--tokenizer / --run-dir: give exactly one of them");
  auto tok = a.run_dir.empty() ? load_tokenizer(a.tokenizer) : std::move(open_trained_run(a.run_dir).tokenizer);
  if (a.json) return run_encode_json(*tok, a.input);
  std::vector<std::string> texts = a.text.empty() ? read_texts(a.input, a.jsonl_field) : std::vector<std::string>{a.text};
  if (a.max_mb > 0) {
    size_t total = 0, keep = 0;
    while (keep < texts.size() && double(total) < a.max_mb * 1e6) total += texts[keep++].size();
    texts.resize(keep);
  }
  if (a.bench) {
    const int threads = a.threads > 0 ? a.threads : omp_get_max_threads();
    uint64_t bytes = 0;
    for (const auto& t : texts) bytes += t.size();
    std::vector<double> secs;
    uint64_t tokens = 0;
    for (int r = 0; r < std::max(1, a.repeat); ++r) {
      tokens = 0;
      const auto t0 = std::chrono::steady_clock::now();
      FirstError error;
#pragma omp parallel num_threads(threads) reduction(+ : tokens)
      {
        std::vector<uint32_t> ids;
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < texts.size(); ++i) {
          ids.clear();
          error.run([&] { tok->encode(texts[i], ids); });
          tokens += ids.size();
        }
      }
      error.rethrow();
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(secs.begin(), secs.end());
    const double med = secs[secs.size() / 2];
    std::printf("%s: %zu texts, %.2f MB, %llu tokens (%.2f bytes/token), %d thread(s): %.2f MB/s (median of %zu, %.3f s)\n",
                a.tokenizer.c_str(), texts.size(), double(bytes) / 1e6, (unsigned long long)tokens,
                double(bytes) / double(std::max<uint64_t>(tokens, 1)), threads, double(bytes) / 1e6 / med, secs.size(), med);
    return;
  }
  std::vector<uint32_t> ids;
  std::string line;
  for (const auto& t : texts) {
    ids.clear();
    tok->encode(t, ids);
    if (a.count) {
      std::printf("%zu\n", ids.size());
      continue;
    }
    line.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ' ';
      line += std::to_string(ids[i]);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
}

void run_decode(const DecodeArgs& a) {
  auto tok = load_tokenizer(a.tokenizer);
  const std::string text = a.ids.empty() ? read_input(a.input) : a.ids;
  std::vector<uint32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r' || text[i] == ',')) ++i;
    if (i >= text.size()) break;
    uint64_t v = 0;
    size_t j = i;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9' && j - i < 11) v = v * 10 + uint64_t(text[j++] - '0');
    if (j == i || (j < text.size() && text[j] != ' ' && text[j] != '\n' && text[j] != '\t' && text[j] != '\r' && text[j] != ','))
      fail("--ids: '%s' is not a token id", text.substr(i, std::min<size_t>(20, text.size() - i)).c_str());
    if (v >= tok->vocab_size()) fail("--ids: token id %llu is outside the vocabulary (%u)", (unsigned long long)v, tok->vocab_size());
    ids.push_back(uint32_t(v));
    i = j;
  }
  const std::string out = tok->decode(ids);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_tokenizer_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenizer", "Train a BPE tokenizer; encode and decode text");
  cmd->require_subcommand(1);

  auto ta = std::make_shared<TrainArgs>();
  auto* tr = cmd->add_subcommand("train", "Train a byte-level BPE tokenizer (writes FILE.tiktoken and FILE.tiktoken.json)");
  tr->add_option("--input", ta->inputs, "Text files (one document each), folders of them, or .jsonl files")->required();
  tr->add_option("--vocab-size", ta->vocab_size, "Vocabulary size including the special tokens")->capture_default_str();
  tr->add_option("--out", ta->out, "Output .tiktoken file (the sidecar OUT.json is written next to it)")->required();
  tr->add_option("--pattern", ta->pattern, "Pre-tokenisation regex (PCRE2 syntax; default: nanochat's GPT-4-style pattern)");
  tr->add_option("--name", ta->name, "Name stored in the sidecar")->capture_default_str();
  tr->add_option("--jsonl-field", ta->jsonl_field, "JSONL field holding the text")->capture_default_str();
  tr->add_option("--threads", ta->threads, "Threads for splitting (default: all cores)");
  tr->callback([ta] { run_train(*ta); });

  auto ea = std::make_shared<EncodeArgs>();
  auto* en = cmd->add_subcommand("encode", "Print token ids of text (one line of ids per text / JSONL record)");
  en->add_option("--tokenizer", ea->tokenizer,
                 "'bytes', a .tiktoken file, a tiktoken encoder .json, or gpt2|r50k_base|p50k_base|cl100k_base|o200k_base");
  en->add_option("--run-dir", ea->run_dir, "Use the tokenizer of this run folder (instead of --tokenizer)");
  en->add_flag("--json", ea->json, "Input: a JSON array of strings; output: {\"bos\": id, \"ids\": [their id arrays]}");
  en->add_option("--input", ea->input, "Text file ('-' = stdin) or .jsonl (one line of ids per record)")->capture_default_str();
  en->add_option("--text", ea->text, "Encode this text instead of --input");
  en->add_option("--jsonl-field", ea->jsonl_field, "JSONL field holding the text")->capture_default_str();
  en->add_flag("--count", ea->count, "Print only the number of tokens per text");
  en->add_flag("--bench", ea->bench, "Measure encoding throughput (MB/s) instead of printing ids");
  en->add_option("--threads", ea->threads, "Threads for --bench (default: all cores)");
  en->add_option("--repeat", ea->repeat, "Repetitions for --bench (the median is reported)")->capture_default_str();
  en->add_option("--max-mb", ea->max_mb, "Use only the first texts up to this many MB");
  en->callback([ea] { run_encode(*ea); });

  auto da = std::make_shared<DecodeArgs>();
  auto* de = cmd->add_subcommand("decode", "Print the text (bytes) of token ids");
  de->add_option("--tokenizer", da->tokenizer, "Tokenizer spec (as for encode)")->required();
  de->add_option("--ids", da->ids, "Token ids separated by spaces or commas");
  de->add_option("--input", da->input, "File of token ids ('-' = stdin), used without --ids")->capture_default_str();
  de->callback([da] { run_decode(*da); });
}

}  // namespace nt::cli
