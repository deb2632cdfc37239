// SPDX-License-Identifier: MIT
#include "model/config.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/kernels.h"

namespace nt {

void check_window_pattern(const char* flag, const std::string& pattern) {
  if (pattern.empty()) fail("%s: must not be empty (a string of S and L, e.g. SSSL)", flag);
  if (pattern.size() > 1024) fail("%s: longer than 1024 layers", flag);
  for (char ch : pattern)
    if (ch != 'S' && ch != 'L')
      fail("%s %s: only S (short window) and L (full context) allowed", flag, pattern.c_str());
}

int64_t ModelConfig::short_window_keys() const {
  return short_window > 0 ? short_window : (int64_t(seq_len) + 511) / 512 * 128;  // ceil(T / 4 / 128) * 128
}

int64_t ModelConfig::attention_window(int l) const {
  if (l == depth - 1 || window_pattern.empty()) return kFullWindow;
  return window_pattern[size_t(l) % window_pattern.size()] == 'S' ? short_window_keys() : kFullWindow;
}

void ModelConfig::validate() const {
  auto pos = [](int v, const char* flag) {
    if (v <= 0) fail("%s %d: must be positive", flag, v);
  };
  pos(depth, "--depth");
  pos(d_model, "--d-model");
  pos(n_head, "--n-head");
  pos(n_kv_head, "--n-kv-head");
  pos(head_dim, "--head-dim");
  pos(seq_len, "--seq-len");
  pos(vocab_size, "--vocab-size");
  if (head_dim % 2 != 0) fail("--head-dim %d: must be even (rotary embeddings rotate pairs)", head_dim);
  if (n_head % n_kv_head != 0) fail("--n-kv-head %d: must divide --n-head %d", n_kv_head, n_head);
  if (int64_t(n_head) * head_dim != d_model)
    fail("--n-head %d x --head-dim %d must equal --d-model %d", n_head, head_dim, d_model);
  if (depth > 1024 || d_model > 65536 || n_head > 4096 || head_dim > 4096 || seq_len > (1 << 20) ||
      vocab_size > (1 << 24))
    fail("model shape out of range (depth %d, d-model %d, n-head %d, head-dim %d, seq-len %d, vocab %d)", depth,
         d_model, n_head, head_dim, seq_len, vocab_size);
  if (!(rope_base > 1)) fail("--rope-base %g: must be > 1", rope_base);
  validate_fields(static_cast<const ModelVariants&>(*this));
  if (!(qk_scale > 0)) fail("--qk-scale %g: must be positive", qk_scale);
  if (!(norm_eps > 0)) fail("norm_eps %g: must be positive", norm_eps);
}

nlohmann::json ModelConfig::to_json() const {
  nlohmann::json j = {{"depth", depth},         {"d_model", d_model},   {"n_head", n_head},
                      {"n_kv_head", n_kv_head}, {"head_dim", head_dim}, {"seq_len", seq_len},
                      {"vocab_size", vocab_size}, {"rope_base", rope_base}, {"norm_eps", norm_eps}};
  j.update(fields_to_json(static_cast<const ModelVariants&>(*this)));
  return j;
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  ModelConfig c;
  // get<int>() would cast an out-of-range float (undefined behaviour) or wrap a large integer.
  auto get_int = [&](const char* key) {
    const auto& v = j.at(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(INT32_MAX)
                                                          : v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX))
      fail("model config: %s must be an integer", key);
    return int(v.get<int64_t>());
  };
  try {
    c.depth = get_int("depth");
    c.d_model = get_int("d_model");
    c.n_head = get_int("n_head");
    c.n_kv_head = get_int("n_kv_head");
    c.head_dim = get_int("head_dim");
    c.seq_len = get_int("seq_len");
    c.vocab_size = get_int("vocab_size");
    c.rope_base = j.value("rope_base", 10000.0);
    c.norm_eps = j.value("norm_eps", 1e-6);
    fields_from_json(static_cast<ModelVariants&>(c), j);  // each optional: older files are the baseline
  } catch (const nlohmann::json::exception& e) {
    fail("model config: %s", e.what());
  }
  c.validate();
  return c;
}

void apply_nanochat_variants(ModelVariants& v) {
  const ModelVariants base;
  if (v.window_pattern == base.window_pattern) v.window_pattern = "SSSL";
  if (v.value_embeds == base.value_embeds) v.value_embeds = true;
  if (v.resid_scalars == base.resid_scalars) v.resid_scalars = true;
  if (v.smear == base.smear) v.smear = true;
  if (v.backout == base.backout) v.backout = true;
  if (v.qk_scale == base.qk_scale) v.qk_scale = 1.2;
  // The soft-cap (15), the ReLU² MLP and the untied head are nanochat's and the baseline's alike.
}

ModelConfig resolve_model_config(const ShapeFlags& f, int data_vocab) {
  ModelConfig c;
  static_cast<ModelVariants&>(c) = f;
  bool fixed_vocab = false;
  if (f.preset == "tiny") {
    // Tests and smoke runs: trains in seconds.
    c.depth = 2, c.d_model = 64, c.n_head = 2, c.n_kv_head = 2, c.head_dim = 32, c.seq_len = 64;
  } else if (f.preset == "cpu" || f.preset == "nanochat") {
    // The default: a few-million-parameter model that makes real progress in 5 minutes on 2 cores
    // (docs/BENCHMARKS.md). nanochat: the same shapes with nanochat's current variants, so that
    // the two compare in the same budget.
    c.depth = 4, c.d_model = 256, c.n_head = 4, c.n_kv_head = 4, c.head_dim = 64, c.seq_len = 256;
    if (f.preset == "nanochat") apply_nanochat_variants(c), c.rope_base = kNanochatRopeBase;
  } else if (f.preset == "frontier") {
    // The competition baseline: depth 8, d_model 512 (4 heads of 128), vocab 32768, T 2048.
    c.depth = 8, c.d_model = 512, c.n_head = 4, c.n_kv_head = 4, c.head_dim = 128, c.seq_len = 2048;
    c.vocab_size = 32768, fixed_vocab = true;
  } else {
    fail("--preset %s: unknown preset (tiny, cpu, frontier, nanochat)", f.preset.c_str());
  }
  if (f.depth < 0 || f.d_model < 0 || f.n_head < 0 || f.n_kv_head < 0 || f.head_dim < 0 || f.seq_len < 0 ||
      f.vocab_size < 0)
    fail("model shape flags must be positive (depth %d, d-model %d, n-head %d, n-kv-head %d, head-dim %d, "
         "seq-len %d, vocab-size %d)", f.depth, f.d_model, f.n_head, f.n_kv_head, f.head_dim, f.seq_len, f.vocab_size);
  if (f.depth > 1024 || f.head_dim > 4096)  // before the arithmetic below can overflow
    fail("model shape out of range (depth %d, head-dim %d)", f.depth, f.head_dim);
  if (f.head_dim != 0) c.head_dim = f.head_dim;
  if (f.depth != 0) {  // nanochat: d_model = 64 * depth, rounded up to a multiple of head_dim (128)
    c.depth = f.depth;
    if (f.head_dim == 0) c.head_dim = 128;
    c.d_model = ((64 * f.depth + c.head_dim - 1) / c.head_dim) * c.head_dim;
  }
  if (f.d_model != 0) c.d_model = f.d_model;
  if (f.n_head != 0) {
    c.n_head = f.n_head;
    if (f.head_dim == 0) {
      if (c.d_model % f.n_head != 0) fail("--n-head %d: does not divide d_model %d", f.n_head, c.d_model);
      c.head_dim = c.d_model / f.n_head;
    }
  } else {
    if (c.d_model % c.head_dim != 0) fail("--head-dim %d: does not divide d_model %d", c.head_dim, c.d_model);
    c.n_head = c.d_model / c.head_dim;
  }
  c.n_kv_head = f.n_kv_head != 0 ? f.n_kv_head : c.n_head;
  if (f.seq_len != 0) c.seq_len = f.seq_len;
  if (f.rope_base != 0) c.rope_base = f.rope_base;
  if (f.vocab_size != 0) c.vocab_size = f.vocab_size;
  else if (!fixed_vocab && data_vocab > 0) c.vocab_size = data_vocab;
  c.validate();
  return c;
}

int64_t count_params(const ModelConfig& c) {
  const int64_t KD = int64_t(c.n_kv_head) * c.head_dim;
  int64_t lookups = c.tie_embeddings ? 0 : int64_t(c.vocab_size) * c.d_model;  // wte (tied: counted as the head)
  for (int l = 0; l < c.depth; ++l)
    if (c.has_value_embed(l)) lookups += int64_t(c.vocab_size) * KD;
  const int64_t scalars = (c.resid_scalars ? 2 * c.depth : 0) + (c.smear ? 1 : 0) + (c.backout ? 1 : 0);
  return count_matmul_params(c) + lookups + scalars;
}

int64_t count_matmul_params(const ModelConfig& c) {
  const int64_t C = c.d_model, HD = int64_t(c.n_head) * c.head_dim, KD = int64_t(c.n_kv_head) * c.head_dim;
  const int64_t per_layer = HD * C + 2 * KD * C + C * HD + (int64_t(c.mlp_in_rows()) + c.mlp_dim()) * C;
  int64_t gates = c.smear ? 24 : 0;  // the smear gate and the value embeddings' gates (KVH, 12)
  for (int l = 0; l < c.depth; ++l)
    if (c.has_value_embed(l)) gates += int64_t(c.n_kv_head) * 12;
  return c.depth * per_layer + gates + int64_t(c.vocab_size) * C;
}

double attention_keys_per_query(int64_t window, int64_t seq_len) {
  // The causal triangle (T^2 / 2) less the one below the window's band ((T - W)^2 / 2), over T.
  const double T = double(seq_len), W = double(std::min(window, seq_len));
  return T / 2 - (T - W) * (T - W) / (2 * T);
}

double flops_per_token(const ModelConfig& c, int seq_len) {
  // Attention: QK^T and PV, forward + backward (x3), over the keys each query sees.
  double keys = 0;
  for (int l = 0; l < c.depth; ++l) keys += attention_keys_per_query(c.attention_window(l), seq_len);
  const double attn = 12.0 * c.n_head * c.head_dim * keys;
  return 6.0 * double(count_matmul_params(c)) + attn;
}

}  // namespace nt
