// SPDX-License-Identifier: MIT
// The memory refusals, before anything is allocated: a training run needing more than 0.9 of
// the available memory (parameters and their gradients, optimizer state, activations), and a
// forward-only model for sample / eval (parameters twice, one batch's activations, the KV cache).
// Each refusal is one line naming what to change.
//
// Checked to fail on purpose: the threshold at all of it instead of 0.9, the gradients left out of
// the training estimate (params once), and the KV cache left out of the inference estimate each
// fail a test below.
#include <gtest/gtest.h>

#include <string>

#include "core/check.h"
#include "core/system.h"
#include "model/config.h"
#include "model/gpt.h"
#include "train/train_plan.h"

namespace nt {
namespace {

std::string refusal(const TrainPlan& p) {
  try {
    check_memory(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A plan whose memory is given by hand: params + grads (as large) + state + activations
// against 90 % of `available`.
TrainPlan plan_of(size_t params, size_t state, size_t activations, size_t available) {
  TrainPlan p;
  p.memory.params = params, p.memory.state = state, p.memory.activations = activations;
  p.memory.available = available;
  return p;
}

TEST(MemoryCheck, TrainingRefusedAboveNinetyPercentWithOneLine) {
  // need = 2 * 100 + 100 + activations, against 900 of 1000.
  EXPECT_EQ(refusal(plan_of(100, 100, 599, 1000)), "");
  EXPECT_EQ(refusal(plan_of(100, 100, 600, 1000)), "");
  const std::string e = refusal(plan_of(100, 100, 601, 1000));
  EXPECT_NE(e.find("this run needs about"), std::string::npos) << e;
  EXPECT_NE(e.find("--batch-size"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  // Each part alone can tip it over: the gradients count as much as the parameters.
  EXPECT_NE(refusal(plan_of(351, 100, 100, 1000)), "");  // 2 * 351 + 200 = 902
  EXPECT_NE(refusal(plan_of(100, 601, 100, 1000)), "");
  EXPECT_EQ(refusal(plan_of(349, 100, 100, 1000)), "");  // 898
  // Unknown available memory (0): nothing to refuse against.
  EXPECT_EQ(refusal(plan_of(100, 100, size_t(1) << 50, 0)), "");
}

std::string inference_refusal(const ModelConfig& c, int batch, int seq) {
  try {
    check_inference_memory(c, batch, seq, "sample");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A model whose KV cache alone (2 x depth x seq_len x kv heads x head dim floats) is twice the
// available memory while its parameters and one token's activations are small: refused only if
// the cache is counted. The same model with a short context fits.
TEST(MemoryCheck, InferenceCountsTheKvCache) {
  const double available = double(available_memory_bytes());
  if (available <= 0) GTEST_SKIP() << "available memory unknown (no /proc/meminfo)";
  ModelConfig c;
  c.depth = 8, c.d_model = 64, c.n_head = 1, c.n_kv_head = 1, c.head_dim = 64, c.vocab_size = 256;
  const double per_position = 2.0 * c.depth * c.n_kv_head * c.head_dim * sizeof(float);
  c.seq_len = int(std::min(2.0 * available / per_position, 2e9));
  ASSERT_GT(2.0 * double(count_params(c)) * sizeof(float) + double(Gpt::activation_bytes(c, 1, 1)), 0.0);
  ASSERT_LT(2.0 * double(count_params(c)) * sizeof(float) + double(Gpt::activation_bytes(c, 1, 1)), 0.1 * available)
      << "the model's own weights and activations should be small here";
  const std::string e = inference_refusal(c, 1, 1);
  EXPECT_NE(e.find("sample: this model needs about"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
  c.seq_len = 1024;
  EXPECT_EQ(inference_refusal(c, 1, 1), "");
}

// Activations of a long batch are counted too: the same small model refused for a batch whose
// activations exceed the memory, accepted for one row.
TEST(MemoryCheck, InferenceCountsTheBatchActivations) {
  const double available = double(available_memory_bytes());
  if (available <= 0) GTEST_SKIP() << "available memory unknown (no /proc/meminfo)";
  ModelConfig c;
  c.depth = 2, c.d_model = 64, c.n_head = 1, c.n_kv_head = 1, c.head_dim = 64, c.vocab_size = 256, c.seq_len = 4096;
  const double one_row = double(Gpt::activation_bytes(c, 1, c.seq_len));
  const int batch = int(std::min(2.0 * available / one_row + 1, 1e9));
  EXPECT_NE(inference_refusal(c, batch, c.seq_len), "") << batch << " rows";
  EXPECT_EQ(inference_refusal(c, 1, c.seq_len), "");
}

}  // namespace
}  // namespace nt
