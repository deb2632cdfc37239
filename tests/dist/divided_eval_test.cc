// SPDX-License-Identifier: MIT
// The divided evaluation in one process: the validation batches split into 2, 3 or 5 contiguous
// parts, each part's per-batch sums filled in apart and then added as the ranks add them (a slot
// is one part's, the others add zeros), give evaluate_bpb's result bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "data/loader.h"
#include "data/shard_format.h"
#include "eval/bpb.h"
#include "model/params.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace nt {
namespace {

TEST(DividedEval, PartsGiveOneProcessBits) {
  const auto tok = load_tokenizer("bytes");
  const std::string path = test::tmp_dir("divided_eval") + "/val.bin";
  ShardWriter w(path, tok->vocab_size(), tok->bos_id(), tok->identity());
  for (int d = 0; d < 40; ++d) {
    std::vector<uint32_t> ids;
    tok->encode("document " + std::to_string(d) + std::string(size_t(d % 7) * 5, char('a' + d % 26)), ids);
    w.add_document(ids);
  }
  w.finish();
  std::vector<std::unique_ptr<Shard>> shards;
  shards.push_back(std::make_unique<Shard>(path, nullptr));
  const int B = 2, T = 16;
  ValLoader val(shards, B, T);
  ASSERT_GE(val.num_batches(), 5u);
  ModelConfig c;
  c.depth = 1, c.d_model = 32, c.n_head = 2, c.n_kv_head = 2, c.head_dim = 16, c.seq_len = T;
  c.vocab_size = int(tok->vocab_size());
  Gpt model(c, cpu_kernels(), B, T);
  init_params(model.params(), 5);  // a model whose losses differ from target to target
  const BpbResult whole = evaluate_bpb(model, val, *tok, B, T);
  const size_t batches = val.num_batches();
  for (size_t n : {size_t(2), size_t(3), size_t(5)}) {
    std::vector<double> sum(3 * batches, 0.0);
    for (size_t r = 0; r < n; ++r) {
      std::vector<double> part(3 * batches, 0.0);
      bpb_batch_sums(model, val, *tok, B, T, r * batches / n, (r + 1) * batches / n, part.data());
      for (size_t i = 0; i < sum.size(); ++i) sum[i] = sum[i] + part[i];
    }
    const BpbResult split = bpb_from_batch_sums(sum.data(), batches);
    EXPECT_EQ(0, std::memcmp(&split.bpb, &whole.bpb, sizeof(double)))
        << n << " parts: " << split.bpb << " vs " << whole.bpb;
    EXPECT_EQ(0, std::memcmp(&split.loss, &whole.loss, sizeof(double))) << n << " parts";
    EXPECT_EQ(split.targets, whole.targets);
    EXPECT_EQ(split.bytes, whole.bytes);
  }
  EXPECT_GT(whole.bpb, 0.0);
}

}  // namespace
}  // namespace nt
