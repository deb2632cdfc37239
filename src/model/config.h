// SPDX-License-Identifier: MIT
// The model's shape: presets, nanochat's depth convention, explicit overrides, validation.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/fields.h"

namespace nt {

// --window-pattern: a non-empty string of S (short window) and L (full context); fails naming
// the flag otherwise.
void check_window_pattern(const char* flag, const std::string& pattern);

// The architecture's variants, each off by default (the baseline above); shared by ModelConfig
// and the command line's ShapeFlags, so that flags, config.json and the weights' metadata all
// come from this one list. docs/FORMATS.md names the tensors each adds.
struct ModelVariants {
  double qk_scale = 1.0;  // q and k multiplied by it after rotary + QK-norm (nanochat: 1.2)
  double softcap = 15.0;  // logits = cap tanh(logits / cap); 0: no soft-cap
  std::string mlp = "relu2";
  bool tie_embeddings = false;  // lm_head is wte
  bool resid_scalars = false;   // x = resid_lambdas[i] x + x0_lambdas[i] x0 before block i
  bool smear = false;           // previous-token mix after the embedding
  bool backout = false;         // x -= backout_lambda x_mid before the final norm
  bool value_embeds = false;    // per-layer value embeddings added into v
  std::string window_pattern = "L";  // per-layer attention windows, tiled over the layers (nanochat: SSSL)
  int short_window = 0;              // S's window; 0: ceil(T / 4 / 128) * 128

  template <class V>
  void for_each_field(V&& v) {
    const char* g = "Model variants";
    v(qk_scale, {.key = "qk_scale", .flag = "--qk-scale", .help = "Scale of q and k after the QK-norm (nanochat: 1.2)",
                 .group = g, .show_default = true, .optional = true, .min = 0, .max_open = false, .finite = true,
                 .error = "must be positive and finite"});
    v(softcap, {.key = "softcap", .flag = "--softcap", .help = "Logit soft-cap value (0: none)", .group = g,
                .show_default = true, .optional = true, .min = 0, .finite = true, .error = "must be >= 0 and finite"});
    v(mlp, {.key = "mlp", .flag = "--mlp", .help = "MLP activation: relu2 | swiglu | gelu (tanh form)", .group = g,
            .show_default = true, .optional = true, .choices = "relu2 swiglu gelu"});
    v(tie_embeddings, {.key = "tie_embeddings", .flag = "--tie-embeddings",
                       .help = "The output head shares the token embedding", .group = g, .optional = true});
    v(resid_scalars, {.key = "resid_scalars", .flag = "--resid-scalars",
                      .help = "Per-layer resid_lambdas and x0_lambdas mixing the embedding back in", .group = g,
                      .optional = true});
    v(smear, {.key = "smear", .flag = "--smear", .help = "Gated previous-token mix after the embedding", .group = g,
              .optional = true});
    v(backout, {.key = "backout", .flag = "--backout",
                .help = "Subtract the middle layer's residual (times backout_lambda) before the head", .group = g,
                .optional = true});
    v(value_embeds, {.key = "value_embeds", .flag = "--value-embeds",
                     .help = "Value embeddings added into v on alternating layers and the last", .group = g,
                     .optional = true});
    v(window_pattern, {.key = "window_pattern", .flag = "--window-pattern",
                       .help = "Attention windows tiled over the layers, the last always L: S short, L full "
                               "context (nanochat: SSSL)",
                       .group = g, .show_default = true, .optional = true, .check = check_window_pattern});
    v(short_window, {.key = "short_window", .flag = "--short-window",
                     .help = "Keys before the query an S layer attends to (0: ceil(T/4/128)*128)", .group = g,
                     .show_default = true, .optional = true, .min = 0, .max = 1 << 20,
                     .error = "must be in [0, 1048576]"});
  }
};

struct ModelConfig : ModelVariants {
  int depth = 4;         // L, transformer blocks
  int d_model = 256;     // C
  int n_head = 4;        // H, query heads
  int n_kv_head = 4;     // KVH, key/value heads (divides H)
  int head_dim = 64;     // D
  int seq_len = 256;     // T, maximum context (rotary table size)
  int vocab_size = 257;  // V
  double rope_base = 10000.0;
  double norm_eps = 1e-6;

  // The MLP's hidden width: 4C, or for SwiGLU 2/3 of it rounded up to a multiple of 64 (the same
  // FLOPs with its two input projections).
  int mlp_dim() const { return mlp == "swiglu" ? (8 * d_model / 3 + 63) / 64 * 64 : 4 * d_model; }
  // Rows of the MLP's input projection: the hidden width, twice for SwiGLU (gate and up).
  int mlp_in_rows() const { return mlp == "swiglu" ? 2 * mlp_dim() : mlp_dim(); }
  // Whether layer l has a value embedding: alternating layers, ending at the last.
  bool has_value_embed(int l) const { return value_embeds && l % 2 == (depth - 1) % 2; }
  // The layer whose output the backout subtracts.
  int backout_layer() const { return depth / 2; }
  // Layer l's attention window W (query t attends to keys t - W .. t): the pattern tiled over the
  // layers, the last layer always L; L is the whole sequence (kernels.h's kFullWindow), S is
  // short_window, or ceil(seq_len / 4 / 128) * 128 when that is 0.
  int64_t attention_window(int l) const;
  // S's window at this config's seq_len.
  int64_t short_window_keys() const;
  // Whether some layer's window leaves out keys of a seq_len sequence.
  bool has_short_windows() const {
    for (int l = 0; l < depth; ++l)
      if (attention_window(l) < seq_len - 1) return true;
    return false;
  }
  // Throws nt::Error naming the offending flag.
  void validate() const;
  nlohmann::json to_json() const;
  static ModelConfig from_json(const nlohmann::json& j);  // throws nt::Error
};

// Shape flags as given on the command line; 0 / negative = "not given".
struct ShapeFlags : ModelVariants {
  // (Not an aggregate: GCC 12 warns of an uninitialised base string after `ShapeFlags{}` otherwise.)
  ShapeFlags() {}
  std::string preset = "cpu";
  int depth = 0, d_model = 0, n_head = 0, n_kv_head = 0, head_dim = 0, seq_len = 0, vocab_size = 0;
  double rope_base = 0;

  template <class V>
  void for_each_field(V&& v) {
    v(preset, {.key = "preset", .flag = "--preset",
               .help = "tiny | cpu | frontier | nanochat (the cpu shapes with nanochat's model and optimizer "
                       "variants, docs/VARIANTS.md)",
               .show_default = true});
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
    ModelVariants::for_each_field(v);
  }
};

// --preset nanochat's model variants (nanochat's current model: short windows SSSL, value
// embeddings, residual scalars, smear, backout, QK scale 1.2), each set only where v still holds
// the baseline's value, so that a flag given with another value wins.
void apply_nanochat_variants(ModelVariants& v);
// --preset nanochat's rotary base (nanochat: 100000).
inline constexpr double kNanochatRopeBase = 100000.0;

// Preset, then nanochat's convention for --depth (d_model = 64*depth rounded up to a multiple of
// head_dim, n_head = d_model / head_dim), then explicit overrides. The vocabulary defaults to
// the data's tokenizer (data_vocab) unless the preset or a flag fixes it.
ModelConfig resolve_model_config(const ShapeFlags& f, int data_vocab);

// Parameter counts.
int64_t count_params(const ModelConfig& c);
int64_t count_matmul_params(const ModelConfig& c);  // everything except the embedding lookup
// Training FLOPs per token: 6 * matmul params + attention, 12 * H * D * (the mean number of keys
// a query sees) a layer: T / 2 causal, T / 2 - (T - W)^2 / (2 T) under a window W < T.
double flops_per_token(const ModelConfig& c, int seq_len);
// The mean keys a query of a length-T sequence sees under window W, in flops_per_token's terms.
double attention_keys_per_query(int64_t window, int64_t seq_len);

}  // namespace nt
