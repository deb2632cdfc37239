// SPDX-License-Identifier: MIT
// --preset nanochat expands to exactly nanochat's model and optimizer variants at the cpu
// preset's shapes, and a flag given with another value wins over the preset.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "model/config.h"
#include "optim/optim_config.h"
#include "train/preset_optim.h"

namespace nt {
namespace {

// The keys whose values differ between two JSON objects with the same keys.
std::set<std::string> changed(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<std::string> out;
  for (auto it = a.begin(); it != a.end(); ++it)
    if (b.at(it.key()) != it.value()) out.insert(it.key());
  return out;
}

TEST(PresetNanochat, ModelIsTheCpuShapesWithNanochatsVariants) {
  ShapeFlags cpu, nanochat;
  nanochat.preset = "nanochat";
  const nlohmann::json a = resolve_model_config(cpu, 8192).to_json();
  const nlohmann::json b = resolve_model_config(nanochat, 8192).to_json();
  EXPECT_EQ(changed(a, b), (std::set<std::string>{"window_pattern", "value_embeds", "resid_scalars", "smear",
                                                   "backout", "qk_scale", "rope_base"}));
  EXPECT_EQ(b.at("window_pattern"), "SSSL");
  EXPECT_EQ(b.at("value_embeds"), true);
  EXPECT_EQ(b.at("resid_scalars"), true);
  EXPECT_EQ(b.at("smear"), true);
  EXPECT_EQ(b.at("backout"), true);
  EXPECT_EQ(b.at("qk_scale"), 1.2);
  EXPECT_EQ(b.at("rope_base"), 100000.0);
  EXPECT_EQ(b.at("softcap"), 15.0);
  EXPECT_EQ(b.at("mlp"), "relu2");
  EXPECT_EQ(b.at("tie_embeddings"), false);
}

TEST(PresetNanochat, OptimizerIsNanochats) {
  OptimConfig base, o;
  apply_preset_optim("nanochat", 256, o);
  const nlohmann::json a = base.to_json(), b = o.to_json();
  EXPECT_EQ(changed(a, b), (std::set<std::string>{"muon_coeffs", "muon_eq", "muon_renorm", "normuon", "muon_wd",
                                                   "cautious_wd", "muon_momentum_warmup", "lr_embed", "lr_head",
                                                   "adam_betas_embed", "adam_betas_head", "adam_wd_embed",
                                                   "adam_wd_head"}));
  const double dm = std::sqrt(768.0 / 256);
  EXPECT_EQ(o.muon_coeffs, "polar-express");
  EXPECT_TRUE(o.muon_eq && o.muon_renorm && o.normuon && o.cautious_wd);
  EXPECT_EQ(o.muon_wd, 0.2);
  EXPECT_EQ(o.muon_momentum_warmup, 300);
  EXPECT_DOUBLE_EQ(o.lr_embed, 0.3 * dm);
  EXPECT_DOUBLE_EQ(o.lr_head, 0.008 * dm);
  EXPECT_EQ(o.adam_betas_embed, "0.8,0.995");
  EXPECT_EQ(o.adam_betas_head, "0.8,0.96");
  EXPECT_EQ(o.adam_wd_embed, 0.001);
  EXPECT_EQ(o.adam_wd_head, 0.01);
  o.resolve(256, false);  // a valid combination
  for (const char* other : {"cpu", "tiny", "frontier"}) {
    OptimConfig p;
    apply_preset_optim(other, 256, p);
    EXPECT_EQ(p.to_json(), a) << other;
  }
}

TEST(PresetNanochat, GivenFlagsWin) {
  ShapeFlags f;
  f.preset = "nanochat", f.qk_scale = 1.5, f.window_pattern = "SL", f.rope_base = 20000, f.seq_len = 512;
  const ModelConfig c = resolve_model_config(f, 8192);
  EXPECT_EQ(c.qk_scale, 1.5);
  EXPECT_EQ(c.window_pattern, "SL");
  EXPECT_EQ(c.rope_base, 20000);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.smear);
  OptimConfig o;
  o.muon_wd = 0.05, o.lr_embed = 0.1;
  apply_preset_optim("nanochat", 256, o);
  EXPECT_EQ(o.muon_wd, 0.05);
  EXPECT_EQ(o.lr_embed, 0.1);
  EXPECT_TRUE(o.normuon);
}

}  // namespace
}  // namespace nt
