// SPDX-License-Identifier: MIT
// `data prepare` with a BPE tokenizer: output independent of the thread count, shard rollover,
// data.json and open_dataset.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "core/files.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "test_util.h"
#include "tokenizer/bpe_train.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

TEST(Prepare, BpeShardsIndependentOfThreadsAndRollOver) {
  const fs::path dir = test::tmp_dir("prepare");
  std::string jsonl;
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    std::string t = "Record " + std::to_string(i) + ": ";
    for (int k = 0; k < 1 + i % 17; ++k) t += "the cat sat on mat number " + std::to_string(k * i) + ". ";
    texts.push_back(t);
    jsonl += nlohmann::json({{"body", t}}).dump() + "\n";
  }
  write_file_atomic((dir / "in.jsonl").string(), jsonl);
  BpeTrainOptions topt;
  topt.vocab_size = 350;
  train_bpe(texts, topt)->save((dir / "tok.tiktoken").string());

  PrepareOptions o;
  o.inputs = {(dir / "in.jsonl").string()};
  o.tokenizer = (dir / "tok.tiktoken").string();
  o.docs.jsonl_field = "body";
  o.quiet = true;
  o.max_shard_tokens = 2000;
  o.threads = 1;
  o.out = (dir / "p1").string();
  const auto s1 = prepare_data(o);
  o.threads = 2;
  o.out = (dir / "p2").string();
  const auto s2 = prepare_data(o);
  EXPECT_EQ(s1.train_tokens, s2.train_tokens);
  EXPECT_GT(s1.train_shards, 1u);
  for (const auto& e : fs::recursive_directory_iterator(dir / "p1")) {
    if (!e.is_regular_file() || e.path().filename() == ".lock") continue;
    const fs::path rel = fs::relative(e.path(), dir / "p1");
    EXPECT_EQ(read_file(e.path().string()), read_file((dir / "p2" / rel).string())) << e.path();
  }

  Dataset ds = open_dataset((dir / "p1").string());
  EXPECT_EQ(ds.tokenizer->kind(), "bpe");
  EXPECT_EQ(ds.tokenizer->vocab_size(), 350u);
  EXPECT_EQ(ds.train.size(), s1.train_shards);
  uint64_t docs = 0, tokens = 0;
  for (const auto& s : ds.train) {
    docs += s->header().doc_count;
    tokens += s->size();
    EXPECT_EQ(s->token(0), ds.tokenizer->bos_id());
  }
  EXPECT_EQ(docs, s1.train_docs);
  EXPECT_EQ(tokens, s1.train_tokens);
  // Decoding a shard's documents gives the text back.
  const auto& sh = *ds.train[0];
  std::vector<uint32_t> ids;
  for (uint64_t i = 1; i < sh.size() && sh.token(i) != ds.tokenizer->bos_id(); ++i) ids.push_back(sh.token(i));
  const std::string first = ds.tokenizer->decode(ids);
  EXPECT_NE(std::find(texts.begin(), texts.end(), first), texts.end()) << first;
  // The packing loader runs on it.
  TrainLoader l(ds.train, 2, 32, 1);
  std::vector<int32_t> in(64), tg(64);
  l.next(in.data(), tg.data());
  EXPECT_EQ(uint32_t(in[0]), ds.tokenizer->bos_id());
}

// Preparing into a data folder writes a new generation and switches data.json last: the old data
// stays whole until then, a prepare interrupted before the switch leaves it usable, and its
// unfinished generation is removed by the next prepare.
PrepareOptions small_prepare(const fs::path& dir, const std::string& text) {
  write_file_atomic((dir / "in.txt").string(), text);
  PrepareOptions o;
  o.inputs = {(dir / "in.txt").string()};
  o.quiet = true;
  o.val_frac = 0.5;
  o.docs.cut_bytes = 16;  // several documents, so that both splits get some
  o.out = (dir / "data").string();
  return o;
}

TEST(Prepare, GenerationsSwitchLastAndOldOnesGo) {
  const fs::path dir = test::tmp_dir("prepare_generations");
  std::string text;
  for (int i = 0; i < 20; ++i) text += "line " + std::to_string(i) + " of the first text\n\n";
  PrepareOptions o = small_prepare(dir, text);
  prepare_data(o);
  EXPECT_TRUE(fs::is_directory(dir / "data/gen-1"));
  const uint64_t first_tokens = open_dataset(o.out).train[0]->size();
  // An interrupted prepare: its generation exists, data.json still names gen-1.
  fs::create_directories(dir / "data/gen-2");
  write_file_atomic((dir / "data/gen-2/train_00000.bin").string(), "half");
  EXPECT_EQ(open_dataset(o.out).train[0]->size(), first_tokens);
  // The next prepare removes the leftovers, writes gen-2 and removes gen-1.
  o = small_prepare(dir, text + text);
  prepare_data(o);
  EXPECT_FALSE(fs::exists(dir / "data/gen-1"));
  EXPECT_TRUE(fs::exists(dir / "data/gen-2/train_00000.bin"));
  EXPECT_GT(open_dataset(o.out).train[0]->size(), first_tokens);
}

TEST(Prepare, RefusesOtherFoldersAndASecondPrepare) {
  const fs::path dir = test::tmp_dir("prepare_refuses");
  PrepareOptions o = small_prepare(dir, std::string(40, 'a') + "\n\n" + std::string(40, 'b') + "\n");
  fs::create_directories(o.out);
  write_file_atomic(o.out + "/notes.txt", "mine");
  EXPECT_NE(test::error_of([&] { prepare_data(o); }).find("--out " + o.out + ": not empty and not a data folder (holds notes.txt)"),
            std::string::npos);
  EXPECT_EQ(read_file(o.out + "/notes.txt"), "mine");
  fs::remove(o.out + "/notes.txt");
  bool created = false;
  const int fd = lock_folder(o.out, ".lock", "data folder", &created);
  EXPECT_NE(test::error_of([&] { prepare_data(o); }).find(o.out + ": in use by another nanotrain process (pid "),
            std::string::npos);
  ::close(fd);
  EXPECT_NO_THROW(prepare_data(o));
}

TEST(Prepare, DataJsonMustAgreeWithItsShards) {
  const fs::path dir = test::tmp_dir("prepare_meta");
  PrepareOptions o = small_prepare(dir, std::string(40, 'a') + "\n\n" + std::string(40, 'b') + "\n\n" + std::string(40, 'c'));
  prepare_data(o);
  const std::string meta_path = o.out + "/data.json";
  const auto good = nlohmann::json::parse(read_file(meta_path));
  auto forged = [&](const char* key, const nlohmann::json& value) {
    auto j = good;
    j[key] = value;
    write_file_atomic(meta_path, j.dump());
    return test::error_of([&] { open_dataset(o.out); });
  };
  EXPECT_NE(forged("train_tokens", good["train_tokens"].get<uint64_t>() + 1).find(meta_path + ": says "), std::string::npos);
  EXPECT_NE(forged("val_docs", 99).find(meta_path + ": says "), std::string::npos);
  EXPECT_NE(forged("train_shards", {"../../etc/passwd"}).find("is not a path inside the data folder"), std::string::npos);
  EXPECT_NE(forged("train_shards", {"/etc/passwd"}).find("is not a path inside the data folder"), std::string::npos);
  EXPECT_NE(forged("vocab_size", 300).find("vocab_size / bos_id do not match"), std::string::npos);
  EXPECT_NE(forged("version", 1).find("re-run `nanotrain data prepare`"), std::string::npos);
  write_file_atomic(meta_path, good.dump());
  EXPECT_NO_THROW(open_dataset(o.out));
}

}  // namespace
}  // namespace nt
