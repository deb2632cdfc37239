// SPDX-License-Identifier: MIT
#include "model/params.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/check.h"
#include "core/rng.h"

namespace nt {

std::vector<ParamSpec> param_specs(const ModelConfig& c) {
  const int64_t C = c.d_model, HD = int64_t(c.n_head) * c.head_dim, KD = int64_t(c.n_kv_head) * c.head_dim,
                F = c.mlp_dim(), V = c.vocab_size, L = c.depth;
  // nanochat: std = 1/sqrt(fan_in) * min(1, sqrt(fan_out / fan_in)); output projections zero.
  auto lin = [](int64_t out, int64_t in) {
    return 1.0 / std::sqrt(double(in)) * std::min(1.0, std::sqrt(double(out) / double(in)));
  };
  auto uniform = [](std::string name, int64_t rows, int64_t cols, ParamGroup g, int layer, double a, double b) {
    return ParamSpec{std::move(name), rows, cols, g, layer, 0.0, ParamInit::kUniform, a, b};
  };
  auto ramp = [](std::string name, int64_t n, ParamGroup g, double a, double b) {
    return ParamSpec{std::move(name), 1, n, g, -1, 0.0, ParamInit::kRamp, a, b, 1};
  };
  std::vector<ParamSpec> s;
  // Tied, the table is also the head: N(0, 1/sqrt(C)) gives the first logits unit scale.
  s.push_back(
      {"transformer.wte.weight", V, C, ParamGroup::kEmbed, -1, c.tie_embeddings ? 1.0 / std::sqrt(double(C)) : 1.0});
  for (int l = 0; l < c.depth; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    s.push_back({p + "attn.c_q.weight", HD, C, ParamGroup::kMatrix, l, lin(HD, C)});
    s.push_back({p + "attn.c_k.weight", KD, C, ParamGroup::kMatrix, l, lin(KD, C)});
    s.push_back({p + "attn.c_v.weight", KD, C, ParamGroup::kMatrix, l, lin(KD, C)});
    s.push_back({p + "attn.c_proj.weight", C, HD, ParamGroup::kMatrix, l, 0.0});
    // nanochat: the gate is a block matrix (Muon), starting slightly open.
    if (c.has_value_embed(l))
      s.push_back(uniform(p + "attn.ve_gate.weight", c.n_kv_head, 12, ParamGroup::kMatrix, l, 0.0, 0.02));
    if (c.mlp == "swiglu") s.push_back({p + "mlp.c_gate.weight", F, C, ParamGroup::kMatrix, l, lin(F, C)});
    s.push_back({p + "mlp.c_fc.weight", F, C, ParamGroup::kMatrix, l, lin(F, C)});
    s.push_back({p + "mlp.c_proj.weight", C, F, ParamGroup::kMatrix, l, 0.0});
  }
  if (!c.tie_embeddings) s.push_back({"lm_head.weight", V, C, ParamGroup::kHead, -1, 0.0});
  const double ve_bound = std::sqrt(3.0 / double(C));
  for (int l = 0; l < c.depth; ++l)
    if (c.has_value_embed(l))
      s.push_back(uniform("value_embeds." + std::to_string(l) + ".weight", V, KD, ParamGroup::kValueEmbed, -1,
                          -ve_bound, ve_bound));
  if (c.resid_scalars) {
    s.push_back(ramp("resid_lambdas", L, ParamGroup::kResidLambdas, 1.15, L > 1 ? 1.05 : 1.15));
    s.push_back(ramp("x0_lambdas", L, ParamGroup::kX0Lambdas, 0.20, L > 1 ? 0.05 : 0.20));
  }
  if (c.smear) {
    s.push_back(uniform("smear_gate.weight", 1, 24, ParamGroup::kGates, -1, 0.0, 0.02));
    s.push_back(ramp("smear_lambda", 1, ParamGroup::kGates, 0.0, 0.0));
  }
  if (c.backout) s.push_back(ramp("backout_lambda", 1, ParamGroup::kGates, 0.2, 0.2));
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
  std::unordered_map<std::string, float*> by_name;
  std::unordered_map<std::string, int64_t> numel_of;
  int layers = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    by_name[specs[i].name] = tensor(i);
    numel_of[specs[i].name] = specs[i].numel();
    layers = std::max(layers, specs[i].layer + 1);
  }
  auto get = [&](const std::string& name) {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  ModelTensors t;
  t.wte = get("transformer.wte.weight");
  t.lm_head = get("lm_head.weight");
  if (!t.lm_head) t.lm_head = t.wte;  // tied
  for (int l = 0; l < layers; ++l) {
    const std::string p = "transformer.h." + std::to_string(l) + ".";
    float* gate = get(p + "mlp.c_gate.weight");
    float* fc = get(p + "mlp.c_fc.weight");
    // SwiGLU's gate and up projections are read as one (2F, C) matrix.
    NT_CHECK(!gate || fc - gate == numel_of[p + "mlp.c_gate.weight"], "c_gate and c_fc of layer %d are not adjacent",
             l);
    t.layers.push_back({get(p + "attn.c_q.weight"), get(p + "attn.c_k.weight"), get(p + "attn.c_v.weight"),
                        get(p + "attn.c_proj.weight"), gate ? gate : fc, get(p + "mlp.c_proj.weight"),
                        get("value_embeds." + std::to_string(l) + ".weight"), get(p + "attn.ve_gate.weight")});
  }
  t.resid_lambdas = get("resid_lambdas");
  t.x0_lambdas = get("x0_lambdas");
  t.smear_gate = get("smear_gate.weight");
  t.smear_lambda = get("smear_lambda");
  t.backout_lambda = get("backout_lambda");
  return t;
}

void init_params(ParamArena& p, uint64_t seed) {
  for (size_t i = 0; i < p.specs.size(); ++i) {
    // One stream per tensor, so changing one tensor's shape does not reshuffle the others.
    Rng rng(seed * 0x100000001b3ULL + i);
    float* w = p.tensor(i);
    const ParamSpec& s = p.specs[i];
    const int64_t n = s.numel();
    for (int64_t j = 0; j < n; ++j) {
      switch (s.init) {
        case ParamInit::kNormal:
          w[j] = s.init_std == 0 ? 0.0f : float(s.init_std * rng.normal());
          break;
        case ParamInit::kUniform:
          w[j] = float(s.init_a + (s.init_b - s.init_a) * rng.uniform());
          break;
        case ParamInit::kRamp:
          w[j] = float(s.init_a + (s.init_b - s.init_a) * double(j) / double(std::max<int64_t>(n - 1, 1)));
          break;
      }
    }
  }
}

}  // namespace nt
