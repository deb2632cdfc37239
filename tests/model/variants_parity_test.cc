// SPDX-License-Identifier: MIT
// Each model variant, alone and all together, against the PyTorch reference (tools/torch_ref,
// float64): the loss and every parameter's gradient of the fp32 model, through the weights
// file (which carries the variants' tensors under nanochat's names).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "eval/sampler.h"
#include "model/gpt.h"
#include "model/safetensors.h"
#include "model/weights_io.h"
#include "test_util.h"

namespace nt {
namespace {

struct Variant {
  const char* name;
  std::function<void(ModelConfig&)> set;
};

// Three layers: the backout's middle layer (1) and the value embeddings' layers (0, 2) are inner ones.
ModelConfig base_config() {
  ModelConfig c;
  c.depth = 3, c.d_model = 48, c.n_head = 3, c.n_kv_head = 1, c.head_dim = 16, c.seq_len = 12, c.vocab_size = 67;
  return c;
}

// Random weights everywhere (zero-initialised tensors would hide gradient bugs); the residual
// scalars near their working values.
void random_weights(ParamArena& p, uint64_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < p.specs.size(); ++i) {
    const ParamGroup g = p.specs[i].group;
    const double scale = g == ParamGroup::kEmbed ? 1.0 : g == ParamGroup::kMatrix || g == ParamGroup::kHead ? 0.2 : 0.5;
    const double mean = g == ParamGroup::kResidLambdas ? 1.0 : 0.0;
    for (int64_t j = 0; j < p.specs[i].numel(); ++j) p.tensor(i)[j] = float(mean + r.normal() * scale);
  }
}

class VariantParity : public ::testing::TestWithParam<Variant> {};

TEST_P(VariantParity, LossAndGradientsMatchTorch) {
  const Variant& v = GetParam();
  const std::string dir = test::tmp_dir(std::string("variant_parity_") + v.name);
  ModelConfig cfg = base_config();
  v.set(cfg);
  cfg.validate();
  const int B = 2, T = 11;
  Gpt model(cfg, cpu_kernels(), B, T);
  random_weights(model.params(), 7);
  save_weights(dir + "/model.safetensors", cfg, model.params());

  Rng r(99);
  std::vector<int32_t> in(size_t(B * T)), tg(size_t(B * T));
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = int32_t(r.below(uint64_t(cfg.vocab_size)));
    tg[i] = i % 9 == 4 ? -1 : int32_t(r.below(uint64_t(cfg.vocab_size)));
  }
  StFile batch;
  batch.tensors["inputs"] = st_i32(in.data(), {B, T});
  batch.tensors["targets"] = st_i32(tg.data(), {B, T});
  save_safetensors(dir + "/batch.safetensors", batch);
  std::ofstream(dir + "/opt.json") << nlohmann::json{{"steps", 0}}.dump();

  const std::string cmd = "/usr/bin/python3 " + std::string(NT_SOURCE_DIR) + "/tools/torch_ref/parity.py --dir '" +
                          dir + "' --dtype float64";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the PyTorch oracle failed";
  StFile ref = load_safetensors(dir + "/out.safetensors");

  // Twice: a step's first micro-batch overwrites the gradients, the next adds to them.
  const double loss = model.forward_backward(in.data(), tg.data(), B, T, 1.0, false);
  const double loss2 = model.forward_backward(in.data(), tg.data(), B, T, 1.0, true);
  EXPECT_EQ(loss, loss2);
  const double want_loss = ref.tensors.at("loss").as_f64()[0];
  EXPECT_NEAR(loss / want_loss, 1.0, 2e-5);
  double worst = 0;
  for (size_t i = 0; i < model.params().specs.size(); ++i) {
    const auto& s = model.params().specs[i];
    std::vector<double> want = ref.tensors.at("grad." + s.name).as_f64();
    for (double& x : want) x *= 2;  // two micro-batches
    const std::vector<double> got = test::to_f64(model.grads().tensor(i), size_t(s.numel()));
    const double e = test::rel_err(got, want);
    worst = std::max(worst, e);
    EXPECT_LT(e, 2e-5) << s.name;
  }
  std::printf("[%s] loss rel err %.2e, worst gradient rel err %.2e\n", v.name, std::abs(loss / want_loss - 1), worst);
}

std::vector<Variant> variants() {
  return {
      {"baseline", [](ModelConfig&) {}},
      {"qk_scale", [](ModelConfig& c) { c.qk_scale = 1.2; }},
      {"softcap_off", [](ModelConfig& c) { c.softcap = 0; }},
      {"softcap_30", [](ModelConfig& c) { c.softcap = 30; }},
      {"swiglu", [](ModelConfig& c) { c.mlp = "swiglu"; }},
      {"gelu", [](ModelConfig& c) { c.mlp = "gelu"; }},
      {"tied", [](ModelConfig& c) { c.tie_embeddings = true; }},
      {"resid_scalars", [](ModelConfig& c) { c.resid_scalars = true; }},
      {"smear", [](ModelConfig& c) { c.smear = true; }},
      {"backout", [](ModelConfig& c) { c.backout = true; }},
      {"value_embeds", [](ModelConfig& c) { c.value_embeds = true; }},
      // One gate per kv head: three of them (the base shares one kv head).
      {"value_embeds_kv3", [](ModelConfig& c) { c.value_embeds = true, c.n_kv_head = 3; }},
      // Sliding windows: layers 0 and 1 see 3 keys back (the last is always full); then one
      // short layer of 4 between full ones, with three kv heads.
      {"window", [](ModelConfig& c) { c.window_pattern = "S", c.short_window = 3; }},
      {"window_sl_kv3", [](ModelConfig& c) { c.window_pattern = "LS", c.short_window = 4, c.n_kv_head = 3; }},
      {"all",
       [](ModelConfig& c) {
         c.qk_scale = 1.2, c.softcap = 0, c.mlp = "swiglu", c.tie_embeddings = true;
         c.resid_scalars = c.smear = c.backout = c.value_embeds = true;
         c.window_pattern = "SL", c.short_window = 2;
       }},
      {"all_gelu_kv3",
       [](ModelConfig& c) {
         c.qk_scale = 1.2, c.softcap = 30, c.mlp = "gelu", c.n_kv_head = 3;
         c.resid_scalars = c.smear = c.backout = c.value_embeds = true;
       }},
  };
}

INSTANTIATE_TEST_SUITE_P(Each, VariantParity, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.name); });

// The windows reach the model's attention: the same weights and batch give another loss (the
// parity cases above would also pass if both sides ignored them).
TEST(VariantWindow, ShortWindowsChangeTheLoss) {
  ModelConfig full = base_config(), windowed = base_config();
  windowed.window_pattern = "S", windowed.short_window = 2;
  const int B = 2, T = 11;
  Gpt a(full, cpu_kernels(), B, T), b(windowed, cpu_kernels(), B, T);
  random_weights(a.params(), 5);
  random_weights(b.params(), 5);
  std::vector<int32_t> in(size_t(B * T)), tg(size_t(B * T));
  for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t(i * 7 % 67), tg[i] = int32_t(i * 11 % 67);
  const double la = a.forward_backward(in.data(), tg.data(), B, T, 1.0, false);
  const double lb = b.forward_backward(in.data(), tg.data(), B, T, 1.0, false);
  EXPECT_GT(std::abs(la - lb), 1e-4 * std::abs(la));
  // A window that covers the sequence is the full attention, exactly.
  windowed.short_window = T - 1;
  Gpt c(windowed, cpu_kernels(), B, T);
  random_weights(c.params(), 5);
  EXPECT_EQ(c.forward_backward(in.data(), tg.data(), B, T, 1.0, false), la);
}

// The sampler's KV-cache decoder with every variant on (each activation in turn) against the
// full recompute through the training forward: the same greedy tokens to the end of the context.
TEST(VariantSampling, KvCacheEqualsFullRecompute) {
  for (const char* act : {"swiglu", "gelu", "relu2"}) {
    ModelConfig c = base_config();
    c.seq_len = 24, c.qk_scale = 1.2, c.softcap = 0, c.mlp = act, c.tie_embeddings = true;
    c.resid_scalars = c.smear = c.backout = c.value_embeds = true;
    c.window_pattern = "SSL", c.short_window = 5;
    Gpt m(c, cpu_kernels(), 1, c.seq_len);
    random_weights(m.params(), 21);
    SampleOptions so;
    so.temperature = 0, so.max_tokens = 40, so.use_kv_cache = true;
    const auto a = sample_tokens(m, {1, 2, 3}, so);
    so.use_kv_cache = false;
    const auto b = sample_tokens(m, {1, 2, 3}, so);
    EXPECT_EQ(a, b) << act;
    EXPECT_EQ(a.size(), size_t(c.seq_len - 3 + 1)) << act;
  }
}

}  // namespace
}  // namespace nt
