// SPDX-License-Identifier: MIT
// val_bpb's value, checked against arithmetic done by hand: a model with all-zero weights predicts
// the uniform distribution, so every target costs exactly ln V nats, and val_bpb is
// (targets * ln V) / (ln 2 * bytes), where BOS targets (0 bytes) count in neither.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "data/loader.h"
#include "data/shard_format.h"
#include "eval/bpb.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace nt {
namespace {

TEST(Bpb, UniformModelCostsLog2VPerByteForBytes) {
  const auto tok = load_tokenizer("bytes");
  const std::string dir = test::tmp_dir("bpb");
  const std::string path = dir + "/val.bin";
  ShardWriter w(path, tok->vocab_size(), tok->bos_id(), tok->identity());
  const std::vector<std::string> docs = {"hello world", "a", "the quick brown fox jumps over the lazy dog"};
  uint64_t bytes = 0, targets = 0;
  for (const auto& d : docs) {
    std::vector<uint32_t> ids;
    tok->encode(d, ids);
    w.add_document(ids);
  }
  w.finish();
  std::vector<std::unique_ptr<Shard>> shards;
  shards.push_back(std::make_unique<Shard>(path, nullptr));
  const int B = 2, T = 8;
  ValLoader val(shards, B, T);
  // Count by hand what the loader hands out: every target that is not BOS is one byte.
  std::vector<int32_t> in(size_t(B * T)), tg(size_t(B * T));
  for (size_t i = 0; i < val.num_batches(); ++i) {
    val.batch(i, in.data(), tg.data());
    for (int32_t t : tg)
      if (t >= 0 && uint32_t(t) != tok->bos_id()) ++targets, ++bytes;
  }
  ASSERT_GT(targets, 20u);
  ModelConfig c;
  c.depth = 2, c.d_model = 32, c.n_head = 2, c.n_kv_head = 2, c.head_dim = 16, c.seq_len = T;
  c.vocab_size = int(tok->vocab_size());
  Gpt model(c, cpu_kernels(), B, T);
  std::fill(model.params().data.data(), model.params().data.data() + model.params().numel(), 0.0f);  // uniform
  const BpbResult r = evaluate_bpb(model, val, *tok, B, T);
  EXPECT_EQ(r.targets, targets);
  EXPECT_EQ(r.bytes, bytes);
  const double lnv = std::log(double(c.vocab_size));
  EXPECT_NEAR(r.loss, lnv, 1e-5);
  EXPECT_NEAR(r.bpb, double(targets) * lnv / (std::log(2.0) * double(bytes)), 1e-5);
  EXPECT_NEAR(r.bpb, std::log2(double(c.vocab_size)), 1e-5);  // one byte per target
}

}  // namespace
}  // namespace nt
