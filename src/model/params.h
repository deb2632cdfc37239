// SPDX-License-Identifier: MIT
// The parameter table: the single list of every weight (name, shape, optimizer group, layer),
// from which the arena layout, the optimizers' groups and the safetensors file are all derived.
//
// Names follow nanochat's PyTorch module names, and shapes nn.Linear's (out, in) layout, so
// that the safetensors file loads into a PyTorch model with a few lines (docs/FORMATS.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "model/config.h"

namespace nt {

// Each group has its own optimizer settings. kMatrix goes to Muon, the rest to AdamW; the groups
// after kMatrix hold the tensors of model variants (value embeddings, per-layer residual scalars,
// and the scalar gates of smear and backout).
enum class ParamGroup { kEmbed, kHead, kMatrix, kValueEmbed, kResidLambdas, kX0Lambdas, kGates };

// How a tensor starts: N(0, init_std) (init_std 0: zeros), U(init_a, init_b), or the ramp
// init_a + (init_b - init_a) i / (n - 1) over its n elements (a constant where a == b).
enum class ParamInit { kNormal, kUniform, kRamp };

struct ParamSpec {
  std::string name;
  int64_t rows, cols;  // (out, in) for linears; (V, C) for the embedding; (1, n) for vectors
  ParamGroup group;
  int layer;  // -1 for the tensors outside the blocks
  // Init std (0 means zero init).
  double init_std;
  ParamInit init = ParamInit::kNormal;
  double init_a = 0, init_b = 0;
  int dims = 2;  // 1: a vector of cols elements (rows 1) in the weights file, as nanochat's
  int64_t numel() const { return rows * cols; }
  std::vector<int64_t> shape() const {
    return dims == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
  }
};

// Storage order: wte, then per layer c_q, c_k, c_v, c_proj, [ve_gate], [c_gate], c_fc,
// mlp.c_proj, then lm_head (absent when tied), then the variants' tensors outside the blocks:
// value_embeds.{i}, resid_lambdas, x0_lambdas, smear_gate, smear_lambda, backout_lambda.
std::vector<ParamSpec> param_specs(const ModelConfig& c);

// Pointers into a flat arena laid out by param_specs (used for params and for grads alike).
struct LayerTensors {
  float* wq;      // (H*D, C)
  float* wk;      // (KVH*D, C)
  float* wv;      // (KVH*D, C)
  float* wo;      // (C, H*D)
  float* wfc;     // (F, C), SwiGLU: (2F, C), c_gate's rows then c_fc's (adjacent in the arena)
  float* wproj;   // (C, F)
  float* ve;       // (V, KVH*D) value embedding, or null
  float* ve_gate;  // (KVH, 12), or null
};
struct ModelTensors {
  float* wte;      // (V, C)
  float* lm_head;  // (V, C): wte itself when tied
  std::vector<LayerTensors> layers;
  // The variants' tensors outside the blocks; null where off.
  float* resid_lambdas = nullptr;   // (L)
  float* x0_lambdas = nullptr;      // (L)
  float* smear_gate = nullptr;      // (1, 24)
  float* smear_lambda = nullptr;    // (1)
  float* backout_lambda = nullptr;  // (1)
};

// Elements of an arena laid out from specs (each tensor padded to 64 bytes).
size_t arena_numel(const std::vector<ParamSpec>& specs);

struct ParamArena {
  std::vector<ParamSpec> specs;
  std::vector<size_t> offsets;  // element offset of each spec in `data`
  Buffer<float> data;

  explicit ParamArena(const ModelConfig& c);
  size_t numel() const { return data.size(); }
  float* tensor(size_t i) { return data.data() + offsets[i]; }
  const float* tensor(size_t i) const { return data.data() + offsets[i]; }
  ModelTensors views();
};

// Fills params deterministically from the seed (nanochat init; see ParamSpec::init_std).
void init_params(ParamArena& p, uint64_t seed);

}  // namespace nt
