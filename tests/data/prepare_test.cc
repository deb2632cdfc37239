// SPDX-License-Identifier: MIT
// `data prepare` with a BPE tokenizer: output independent of the thread count, shard rollover,
// data.json and open_dataset.
#include <gtest/gtest.h>

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
  for (const auto& e : fs::directory_iterator(dir / "p1"))
    EXPECT_EQ(read_file(e.path().string()), read_file((dir / "p2" / e.path().filename()).string())) << e.path();

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

}  // namespace
}  // namespace nt
