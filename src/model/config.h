// SPDX-License-Identifier: MIT
// The model's shape: presets, nanochat's depth convention, explicit overrides, validation.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/fields.h"

namespace nt {

struct ModelConfig {
  int depth = 4;         // L, transformer blocks
  int d_model = 256;     // C
  int n_head = 4;        // H, query heads
  int n_kv_head = 4;     // KVH, key/value heads (divides H)
  int head_dim = 64;     // D
  int seq_len = 256;     // T, maximum context (rotary table size)
  int vocab_size = 257;  // V
  double rope_base = 10000.0;
  double softcap = 15.0;
  double norm_eps = 1e-6;

  int mlp_dim() const { return 4 * d_model; }
  // Throws nt::Error naming the offending flag.
  void validate() const;
  nlohmann::json to_json() const;
  static ModelConfig from_json(const nlohmann::json& j);  // throws nt::Error
};

// Shape flags as given on the command line; 0 / negative = "not given".
struct ShapeFlags {
  std::string preset = "cpu";
  int depth = 0, d_model = 0, n_head = 0, n_kv_head = 0, head_dim = 0, seq_len = 0, vocab_size = 0;
  double rope_base = 0;

  template <class V>
  void for_each_field(V&& v) {
    v(preset, {.key = "preset", .flag = "--preset", .help = "tiny | cpu | frontier", .show_default = true});
    v(depth, {.key = "depth", .flag = "--depth", .help = "Layers; sets d_model = 64*depth rounded up to --head-dim",
              .cli_positive = true});
    v(d_model, {.key = "d_model", .flag = "--d-model", .help = "Model width", .cli_positive = true});
    v(n_head, {.key = "n_head", .flag = "--n-head", .help = "Query heads", .cli_positive = true});
    v(n_kv_head, {.key = "n_kv_head", .flag = "--n-kv-head", .help = "Key/value heads (grouped-query attention)",
                  .cli_positive = true});
    v(head_dim, {.key = "head_dim", .flag = "--head-dim", .help = "Head dimension", .cli_positive = true});
    v(seq_len, {.key = "seq_len", .flag = "--seq-len", .help = "Sequence length", .cli_positive = true});
    v(vocab_size, {.key = "vocab_size", .flag = "--vocab-size", .help = "Vocabulary (default: the tokenizer's)",
                   .cli_positive = true});
    v(rope_base, {.key = "rope_base", .flag = "--rope-base", .help = "Rotary base (default 10000)"});
  }
};

// Preset, then nanochat's convention for --depth (d_model = 64*depth rounded up to a multiple of
// head_dim, n_head = d_model / head_dim), then explicit overrides. The vocabulary defaults to
// the data's tokenizer (data_vocab) unless the preset or a flag fixes it.
ModelConfig resolve_model_config(const ShapeFlags& f, int data_vocab);

// Parameter counts.
int64_t count_params(const ModelConfig& c);
int64_t count_matmul_params(const ModelConfig& c);  // everything except the embedding lookup
// Training FLOPs per token: 6 * matmul params + attention (12 * L * H * D * T / 2, causal).
double flops_per_token(const ModelConfig& c, int seq_len);

}  // namespace nt
