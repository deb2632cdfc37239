// SPDX-License-Identifier: MIT
#include "model/params.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace nt {

std::vector<ParamSpec> param_specs(const ModelConfig& c) {
  const int64_t C = c.d_model, HD = int64_t(c.n_head) * c.head_dim, KD = int64_t(c.n_kv_head) * c.head_dim,
                F = c.mlp_dim(), V = c.vocab_size;
  // nanochat: std = 1/sqrt(fan_in) * min(1, sqrt(fan_out / fan_in)); output projections zero.
  auto lin = [](int64_t out, int64_t in) {
    return 1.0 / std::sqrt(double(in)) * std::min(1.0, std::sqrt(double(out) / double(in)));
  };
  std::vector<ParamSpec> s;
  s.push_back({"transformer.wte.weight", V, C, ParamGroup::kEmbed, -1, 1.0});
  for (int l = 0; l < c.depth; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    s.push_back({p + "attn.c_q.weight", HD, C, ParamGroup::kMatrix, l, lin(HD, C)});
    s.push_back({p + "attn.c_k.weight", KD, C, ParamGroup::kMatrix, l, lin(KD, C)});
    s.push_back({p + "attn.c_v.weight", KD, C, ParamGroup::kMatrix, l, lin(KD, C)});
    s.push_back({p + "attn.c_proj.weight", C, HD, ParamGroup::kMatrix, l, 0.0});
    s.push_back({p + "mlp.c_fc.weight", F, C, ParamGroup::kMatrix, l, lin(F, C)});
    s.push_back({p + "mlp.c_proj.weight", C, F, ParamGroup::kMatrix, l, 0.0});
  }
  s.push_back({"lm_head.weight", V, C, ParamGroup::kHead, -1, 0.0});
  return s;
}

static size_t padded(int64_t numel) { return (size_t(numel) + 15) / 16 * 16; }  // 64-byte aligned

size_t arena_numel(const std::vector<ParamSpec>& specs) {
  size_t total = 0;
  for (const auto& sp : specs) total += padded(sp.numel());
  return total;
}

ParamArena::ParamArena(const ModelConfig& c) : specs(param_specs(c)) {
  size_t total = 0;
  for (const auto& sp : specs) {
    offsets.push_back(total);
    total += padded(sp.numel());
  }
  data.resize(total);
}

ModelTensors ParamArena::views() {
  ModelTensors t;
  t.wte = tensor(0);
  const size_t per = 6;
  const size_t layers = (specs.size() - 2) / per;
  for (size_t l = 0; l < layers; ++l) {
    const size_t b = 1 + l * per;
    t.layers.push_back({tensor(b), tensor(b + 1), tensor(b + 2), tensor(b + 3), tensor(b + 4), tensor(b + 5)});
  }
  t.lm_head = tensor(specs.size() - 1);
  return t;
}

void init_params(ParamArena& p, uint64_t seed) {
  for (size_t i = 0; i < p.specs.size(); ++i) {
    // One stream per tensor, so changing one tensor's shape does not reshuffle the others.
    Rng rng(seed * 0x100000001b3ULL + i);
    float* w = p.tensor(i);
    const double std = p.specs[i].init_std;
    for (int64_t j = 0; j < p.specs[i].numel(); ++j) w[j] = std == 0 ? 0.0f : float(std * rng.normal());
  }
}

}  // namespace nt
