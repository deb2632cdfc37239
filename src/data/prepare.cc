// SPDX-License-Identifier: MIT
#include "data/prepare.h"

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/first_error.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "data/dataset.h"
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
    FirstError error;  // e.g. a tokenizer pattern that gives up on a text
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (size_t i = begin; i < end; ++i) {
      error.run([&] { tok.encode(docs[i], ids[i - begin]); });
      progress.add(docs[i].size());
    }
    error.rethrow();
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

// The data folder's generation layout: data.json names the generation in use; each prepare
// writes the next one beside it and switches data.json last (see prepare.h).
constexpr const char* kGenPrefix = "gen-";

bool is_generation(const std::string& name) {
  return name.size() > 4 && name.compare(0, 4, kGenPrefix) == 0 &&
         name.find_first_not_of("0123456789", 4) == std::string::npos;
}

// The files data.json lists outside generation folders (a folder written by an older layout).
std::vector<std::string> listed_files(const nlohmann::json& meta) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (name != "bytes" && name.find('/') == std::string::npos) out.push_back(name);
  };
  for (const char* key : {"train_shards", "val_shards"})
    if (meta.contains(key) && meta[key].is_array())
      for (const auto& n : meta[key])
        if (n.is_string()) add(n.get<std::string>());
  if (meta.contains("tokenizer") && meta["tokenizer"].is_string()) {
    add(meta["tokenizer"].get<std::string>());
    add(meta["tokenizer"].get<std::string>() + ".json");
  }
  return out;
}

// Checks what the output folder holds (empty, or a data folder, or the leftovers of a prepare that
// was interrupted) and removes unfinished generations. Returns the old data.json ({} if none).
nlohmann::json claim_output(const std::string& dir) {
  std::vector<std::string> other;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n != ".lock" && n != "data.json" && !is_generation(n)) other.push_back(n);
  }
  const fs::path meta_path = fs::path(dir) / "data.json";
  nlohmann::json old = nlohmann::json::object();
  if (fs::exists(fs::symlink_status(meta_path))) {
    try {
      old = read_json_file(meta_path.string());
    } catch (const nlohmann::json::exception&) {
      fail("%s: not valid JSON; remove it (and the folder's data) to prepare here", meta_path.c_str());
    }
    if (!old.is_object() || old.value("format", "") != "nanotrain-data")
      fail("%s: not a nanotrain data folder's data.json", meta_path.c_str());
  } else if (!other.empty()) {
    fail("--out %s: not empty and not a data folder (holds %s%s); choose an empty or new folder", dir.c_str(),
         other[0].c_str(), other.size() > 1 ? strf(" and %zu more", other.size() - 1).c_str() : "");
  }
  const std::string current = old.value("generation", std::string());
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (is_generation(n) && n != current) fs::remove_all(e.path());  // an interrupted prepare's
  }
  return old;
}

// After the switch: the old generation's files are no longer used.
void remove_old(const std::string& dir, const nlohmann::json& old) {
  std::error_code ec;
  const std::string gen = old.value("generation", std::string());
  if (is_generation(gen)) fs::remove_all(fs::path(dir) / gen, ec);
  for (const auto& name : listed_files(old)) fs::remove(fs::path(dir) / name, ec);
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
  bool lock_created = false;
  const int lock = lock_folder(opt.out, ".lock", "data folder", &lock_created);
  struct Unlock {
    const std::string& dir;
    int fd;
    ~Unlock() { unlock_folder(dir, ".lock", fd); }
  } unlock{opt.out, lock};
  const nlohmann::json old = claim_output(opt.out);
  int64_t gen_no = 1;
  const std::string old_gen = old.value("generation", std::string());
  if (is_generation(old_gen)) gen_no = std::stoll(old_gen.substr(4)) % 1000000000 + 1;
  const std::string gen = strf("%s%lld", kGenPrefix, (long long)gen_no);
  const std::string gen_dir = (fs::path(opt.out) / gen).string();
  make_dirs(gen_dir);
  const std::string spec = tok->save_to_dir(gen_dir);
  PrepareStats st;
  st.train_docs = train.size();
  st.val_docs = val.size();
  uint64_t total = 0;
  for (const auto& d : train) total += d.size();
  for (const auto& d : val) total += d.size();
  std::vector<std::string> train_names, val_names;
  {
    ProgressLine progress("tokenizing", total, "MB", !opt.quiet);
    train_names = write_shards(*tok, train, gen_dir, "train", opt, progress, &st.train_tokens, &st.train_bytes);
    val_names = write_shards(*tok, val, gen_dir, "val", opt, progress, &st.val_tokens, &st.val_bytes);
    progress.finish();
  }
  st.train_shards = train_names.size();
  st.val_shards = val_names.size();
  for (auto& n : train_names) n = gen + "/" + n;
  for (auto& n : val_names) n = gen + "/" + n;

  nlohmann::json meta = {
      {"format", "nanotrain-data"}, {"version", kDataVersion}, {"generation", gen},
      {"tokenizer", spec == "bytes" ? spec : gen + "/" + spec}, {"tokenizer_id", to_hex(tok->identity())},
      {"vocab_size", tok->vocab_size()}, {"bos_id", tok->bos_id()},
      {"train_shards", train_names}, {"val_shards", val_names},
      {"train_docs", st.train_docs}, {"val_docs", st.val_docs},
      {"train_tokens", st.train_tokens}, {"val_tokens", st.val_tokens},
      {"train_bytes", st.train_bytes}, {"val_bytes", st.val_bytes},
  };
  // The switch: until this rename, the folder's data is the old generation, whole.
  write_file_atomic((fs::path(opt.out) / "data.json").string(), meta.dump(2) + "\n");
  remove_old(opt.out, old);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace nt
