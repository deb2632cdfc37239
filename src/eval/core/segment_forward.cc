// SPDX-License-Identifier: MIT
#include "eval/core/segment_forward.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/system.h"

namespace nt {

SegmentForward::SegmentForward(const ModelConfig& cfg, const ModelTensors& weights, const KernelTable& kernels,
                               const float* cos, const float* sin, int64_t max_rows)
    : cfg_(cfg), w_(weights), k_(kernels), ctx_(job_threads()), cos_(cos), sin_(sin), max_rows_(max_rows) {
  NT_CHECK(max_rows > 0, "bad row budget %lld", static_cast<long long>(max_rows));
  const size_t N = size_t(max_rows), C = size_t(cfg.d_model), HD = size_t(cfg.n_head) * size_t(cfg.head_dim),
               KD = size_t(cfg.n_kv_head) * size_t(cfg.head_dim), F = size_t(cfg.mlp_dim());
  x_.resize(N * C), ln_.resize(N * C);
  q_.resize(N * HD), k_buf_.resize(N * KD), v_.resize(N * KD), att_.resize(N * HD);
  fc_.resize(N * size_t(cfg.mlp_in_rows()));
  if (!k_.matmul_relu2 || cfg.mlp != "relu2") act_.resize(N * F);
  if (cfg.smear) emb_.resize(N * C), prev_row_.resize(N);
  if (cfg.resid_scalars) x0_.resize(N * C);
  if (cfg.backout) xback_.resize(N * C);
  rstd_.resize(N), rstd_h_.resize(N * size_t(cfg.n_head));
  row_cos_.resize(N * size_t(cfg.head_dim / 2)), row_sin_.resize(N * size_t(cfg.head_dim / 2));
  lse_.resize(N * size_t(cfg.n_head));
}

double SegmentForward::linear_flops_per_row(const ModelConfig& c) {
  return 2.0 * double(count_matmul_params(c) - int64_t(c.vocab_size) * c.d_model);  // all but the head
}

double SegmentForward::attention_flops_per_pair(const ModelConfig& c) {
  return 4.0 * c.depth * double(c.n_head) * c.head_dim;  // q.k and p v, each 2 D per head
}

const float* SegmentForward::run(const int32_t* tokens, const std::vector<Segment>& segments, int64_t rows) {
  NT_CHECK(rows > 0 && rows <= max_rows_, "batch of %lld rows outside (0, %lld]", static_cast<long long>(rows),
           static_cast<long long>(max_rows_));
  const int64_t half = cfg_.head_dim / 2;
  // Each row's rotary angles, gathered from its position, so that one call rotates the batch.
  int64_t covered = 0;
  for (const Segment& s : segments) {
    NT_CHECK(s.len > 0 && s.row >= 0 && s.row + s.len <= rows && s.parent_len >= 0 &&
                 s.parent_len + s.len <= cfg_.seq_len && (s.parent_len == 0 || s.parent_row + s.parent_len <= rows),
             "segment outside the batch");
    covered += s.len;
    for (int64_t i = 0; i < s.len; ++i) {
      std::copy_n(cos_ + (s.parent_len + i) * half, half, row_cos_.data() + (s.row + i) * half);
      std::copy_n(sin_ + (s.parent_len + i) * half, half, row_sin_.data() + (s.row + i) * half);
      if (cfg_.smear)
        prev_row_[size_t(s.row + i)] = i > 0 ? s.row + i - 1 : s.parent_len > 0 ? s.parent_row + s.parent_len - 1 : -1;
    }
  }
  NT_CHECK(covered == rows, "segments cover %lld of %lld rows", static_cast<long long>(covered),
           static_cast<long long>(rows));
  return blocks(tokens, rows, segments, nullptr);
}

void SegmentForward::init_cache(KvCache& cache) const {
  const size_t n = size_t(cfg_.depth) * size_t(cfg_.seq_len) * size_t(cfg_.n_kv_head) * size_t(cfg_.head_dim);
  cache.k.resize(n), cache.v.resize(n);
  if (cfg_.smear) cache.last.resize(size_t(cfg_.d_model));
  cache.len = 0;
}

const float* SegmentForward::run_cached(const int32_t* tokens, int64_t rows, KvCache& cache) {
  NT_CHECK(rows > 0 && rows <= max_rows_ && cache.len + rows <= cfg_.seq_len && cache.k.size() > 0,
           "cached run of %lld rows after %lld outside the context", static_cast<long long>(rows),
           static_cast<long long>(cache.len));
  const int64_t half = cfg_.head_dim / 2;
  std::copy_n(cos_ + cache.len * half, rows * half, row_cos_.data());
  std::copy_n(sin_ + cache.len * half, rows * half, row_sin_.data());
  if (cfg_.smear)
    for (int64_t i = 0; i < rows; ++i) prev_row_[size_t(i)] = i > 0 ? i - 1 : cache.len > 0 ? -2 : -1;
  const float* out = blocks(tokens, rows, {}, &cache);
  cache.len += rows;
  return out;
}

void SegmentForward::smear(int64_t rows, const KvCache* cache) {
  const int64_t C = cfg_.d_model;
  const float lambda = *w_.smear_lambda;
  std::copy_n(x_.data(), rows * C, emb_.data());
#pragma omp parallel for schedule(static) num_threads(ctx_.threads())
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = prev_row_[size_t(r)];
    if (p == -1) continue;
    const float* cur = emb_.data() + r * C;
    const float* prev = p == -2 ? cache->last.data() : emb_.data() + p * C;
    double z = 0;
    for (int j = 0; j < 24; ++j) z += double(cur[j]) * double(w_.smear_gate[j]);
    const float gate = lambda * (1.0f / (1.0f + std::exp(-float(z))));
    float* x = x_.data() + r * C;
    for (int64_t j = 0; j < C; ++j) x[j] += gate * prev[j];
  }
}

// v += 3 sigmoid(ve_gate ln1[:12]) ve[token], one gate per kv head (ln_ holds ln1).
void SegmentForward::value_embed(int l, const int32_t* tokens, float* v, int64_t rows) {
  if (!cfg_.has_value_embed(l)) return;
  const int64_t C = cfg_.d_model, KVH = cfg_.n_kv_head, D = cfg_.head_dim, KD = KVH * D;
  const LayerTensors& lw = w_.layers[size_t(l)];
#pragma omp parallel for schedule(static) num_threads(ctx_.threads())
  for (int64_t r = 0; r < rows; ++r) {
    const float* ve = lw.ve + int64_t(tokens[r]) * KD;
    for (int64_t h = 0; h < KVH; ++h) {
      double z = 0;
      for (int j = 0; j < 12; ++j) z += double(ln_[size_t(r * C + j)]) * double(lw.ve_gate[h * 12 + j]);
      const float gate = 3.0f * (1.0f / (1.0f + std::exp(-float(z))));
      for (int64_t e = 0; e < D; ++e) v[r * KD + h * D + e] += gate * ve[h * D + e];
    }
  }
}

// x += act(ln_ Wfc^T) Wproj^T.
void SegmentForward::mlp(const LayerTensors& lw, int64_t rows) {
  const int64_t C = cfg_.d_model, F = cfg_.mlp_dim();
  k_.matmul(ctx_, fc_.data(), ln_.data(), lw.wfc, rows, cfg_.mlp_in_rows(), C, false, true, 0.0f);
  if (cfg_.mlp == "relu2" && k_.matmul_relu2) {
    k_.matmul_relu2(ctx_, x_.data(), fc_.data(), lw.wproj, rows, C, F, false, true, 1.0f, true);
    return;
  }
  if (cfg_.mlp == "swiglu") k_.swiglu_fwd(ctx_, act_.data(), fc_.data(), rows, F);
  else if (cfg_.mlp == "gelu") k_.gelu_fwd(ctx_, act_.data(), fc_.data(), rows * F);
  else k_.relu2_fwd(ctx_, act_.data(), fc_.data(), rows * F);
  k_.matmul(ctx_, x_.data(), act_.data(), lw.wproj, rows, C, F, false, true, 1.0f);
}

// The embedding, the blocks and the final norm over rows whose rotary angles are in place;
// attention over the segments, or after the cache's rows.
const float* SegmentForward::blocks(const int32_t* tokens, int64_t rows, const std::vector<Segment>& segments,
                                    KvCache* cache) {
  const int64_t C = cfg_.d_model, H = cfg_.n_head, KVH = cfg_.n_kv_head, D = cfg_.head_dim, HD = H * D, KD = KVH * D,
                T = cfg_.seq_len;
  const float eps = float(cfg_.norm_eps);
  for (int64_t i = 0; i < rows; ++i)
    NT_CHECK(tokens[i] >= 0 && tokens[i] < cfg_.vocab_size, "token id %d outside the vocabulary (%d)", tokens[i],
             cfg_.vocab_size);
  // x = rms(wte[idx]), then the smear, as the training forward.
  k_.embed_fwd(ctx_, x_.data(), tokens, w_.wte, rows, C);
  k_.rmsnorm_fwd(ctx_, x_.data(), rstd_.data(), x_.data(), rows, C, eps);
  if (cfg_.smear) {
    smear(rows, cache);
    if (cache) std::copy_n(emb_.data() + (rows - 1) * C, C, cache->last.data());
  }
  if (cfg_.resid_scalars) std::copy_n(x_.data(), rows * C, x0_.data());
  for (int l = 0; l < cfg_.depth; ++l) {
    const LayerTensors& lw = w_.layers[size_t(l)];
    const int64_t window = cfg_.attention_window(l);
    if (cfg_.resid_scalars) k_.axpby(ctx_, x_.data(), x0_.data(), rows * C, w_.x0_lambdas[l], w_.resid_lambdas[l]);
    // With a cache, this layer's keys and values go straight into it, after the rows it holds.
    float* k = cache ? cache->k.data() + (l * T + cache->len) * KD : k_buf_.data();
    float* v = cache ? cache->v.data() + (l * T + cache->len) * KD : v_.data();
    k_.rmsnorm_fwd(ctx_, ln_.data(), rstd_.data(), x_.data(), rows, C, eps);
    k_.matmul(ctx_, q_.data(), ln_.data(), lw.wq, rows, HD, C, false, true, 0.0f);
    k_.matmul(ctx_, k, ln_.data(), lw.wk, rows, KD, C, false, true, 0.0f);
    k_.matmul(ctx_, v, ln_.data(), lw.wv, rows, KD, C, false, true, 0.0f);
    value_embed(l, tokens, v, rows);
    k_.rope_norm_fwd(ctx_, q_.data(), rstd_h_.data(), row_cos_.data(), row_sin_.data(), 1, rows, H, D, eps);
    k_.rope_norm_fwd(ctx_, k, rstd_h_.data(), row_cos_.data(), row_sin_.data(), 1, rows, KVH, D, eps);
    if (cfg_.qk_scale != 1.0) {  // q and k times s, folded into q as s^2 (as training)
      const float s2 = float(cfg_.qk_scale * cfg_.qk_scale);
      k_.axpby(ctx_, q_.data(), q_.data(), rows * HD, 0.0f, s2);
    }
    if (cache)
      attention_cached(cache->k.data() + l * T * KD, cache->v.data() + l * T * KD, cache->len, rows, window);
    else
      attention(segments, window);
    k_.matmul(ctx_, x_.data(), att_.data(), lw.wo, rows, C, HD, false, true, 1.0f);
    k_.rmsnorm_fwd(ctx_, ln_.data(), rstd_.data(), x_.data(), rows, C, eps);
    mlp(lw, rows);
    if (cfg_.backout && l == cfg_.backout_layer()) std::copy_n(x_.data(), rows * C, xback_.data());
  }
  if (cfg_.backout) k_.axpby(ctx_, x_.data(), xback_.data(), rows * C, -*w_.backout_lambda, 1.0f);
  k_.rmsnorm_fwd(ctx_, ln_.data(), rstd_.data(), x_.data(), rows, C, eps);
  return ln_.data();
}

namespace {

// Query rows attended together: each key and value row is loaded once for all of them.
constexpr int64_t kQueryBlock = 8;

// The rows of one segment's keys and values, for one kv head: its parent's rows, then its own.
struct KeyRows {
  const float *k, *v;
  int64_t ld, parent_row, parent_len, row;
  const float* key(int64_t j) const { return k + (j < parent_len ? parent_row + j : row + j - parent_len) * ld; }
  const float* value(int64_t j) const { return v + (j < parent_len ? parent_row + j : row + j - parent_len) * ld; }
};

// Causal softmax attention of nb (<= kQueryBlock) consecutive query rows, q rows ldq apart; row b
// sees keys first_ctx + b - 1 - window .. first_ctx + b - 1 (from 0). sc: kQueryBlock rows of
// stride T; acc: kQueryBlock * D.
void attend_block(float* out, int64_t ldo, const float* q, int64_t ldq, int64_t nb, const KeyRows& kv,
                  int64_t first_ctx, int64_t window, int64_t D, int64_t T, float scale, float* sc, float* acc) {
  const int64_t last_ctx = first_ctx + nb - 1;
  window = std::min(window, T);  // (kFullWindow: no bound)
  // Row b's keys [lo(b), first_ctx + b); key j is seen by rows [first(j), past(j)).
  auto lo = [&](int64_t b) { return std::max<int64_t>(0, first_ctx + b - 1 - window); };
  auto first = [&](int64_t j) { return std::max<int64_t>(0, j - first_ctx + 1); };
  auto past = [&](int64_t j) { return std::min<int64_t>(nb, j - first_ctx + 2 + window); };
  for (int64_t j = lo(0); j < last_ctx; ++j) {
    const float* kj = kv.key(j);
    for (int64_t b = first(j); b < past(j); ++b) {
      const float* qb = q + b * ldq;
      float dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int64_t e = 0; e < D; ++e) dot += qb[e] * kj[e];
      sc[b * T + j] = dot * scale;
    }
  }
  float inv[kQueryBlock];
  for (int64_t b = 0; b < nb; ++b) {
    float* s = sc + b * T;
    const int64_t ctx = first_ctx + b;
    float mx = -INFINITY, sum = 0;
    for (int64_t j = lo(b); j < ctx; ++j) mx = std::max(mx, s[j]);
    for (int64_t j = lo(b); j < ctx; ++j) sum += s[j] = std::exp(s[j] - mx);
    inv[b] = 1.0f / sum;
  }
  std::fill(acc, acc + nb * D, 0.0f);
  for (int64_t j = lo(0); j < last_ctx; ++j) {
    const float* vj = kv.value(j);
    for (int64_t b = first(j); b < past(j); ++b) {
      const float p = sc[b * T + j];
      float* a = acc + b * D;
#pragma omp simd
      for (int64_t e = 0; e < D; ++e) a[e] += p * vj[e];
    }
  }
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t e = 0; e < D; ++e) out[b * ldo + e] = acc[b * D + e] * inv[b];
}

}  // namespace

// A segment without a parent is one causal sequence: the training kernel runs it. A continuation
// attends to its parent's rows and then its own, in blocks of query rows here. Scores and sums
// in fp32, as the training kernels.
void SegmentForward::attention(const std::vector<Segment>& segments, int64_t window) {
  const int64_t H = cfg_.n_head, KVH = cfg_.n_kv_head, D = cfg_.head_dim, HD = H * D, KD = KVH * D, group = H / KVH,
                T = cfg_.seq_len;
  const float scale = 1.0f / std::sqrt(float(D));
  const size_t per_thread = size_t(kQueryBlock * (T + D));
  if (scratch_.size() < size_t(ctx_.threads()) * per_thread) scratch_.resize(size_t(ctx_.threads()) * per_thread);
  std::vector<int64_t> children;
  for (int64_t i = 0; i < int64_t(segments.size()); ++i) {
    const Segment& s = segments[size_t(i)];
    if (s.parent_len > 0) {
      children.push_back(i);
      continue;
    }
    k_.attention_fwd(ctx_, att_.data() + s.row * HD, lse_.data(), q_.data() + s.row * HD, k_buf_.data() + s.row * KD,
                     v_.data() + s.row * KD, 1, s.len, H, KVH, D, window);
  }
  // Tasks are (continuation, head); the costliest first, so that long ones do not finish last.
  auto cost = [&](int64_t i) {
    return segments[size_t(i)].len * (segments[size_t(i)].parent_len + segments[size_t(i)].len);
  };
  std::stable_sort(children.begin(), children.end(), [&](int64_t a, int64_t b) { return cost(a) > cost(b); });
  const int64_t tasks = int64_t(children.size()) * H;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx_.threads())
  for (int64_t task = 0; task < tasks; ++task) {
    const Segment& s = segments[size_t(children[size_t(task / H)])];
    const int64_t h = task % H, g = h / group;
    float* sc = scratch_.data() + size_t(omp_get_thread_num()) * per_thread;
    const KeyRows kv{k_buf_.data() + g * D, v_.data() + g * D, KD, s.parent_row, s.parent_len, s.row};
    for (int64_t i0 = 0; i0 < s.len; i0 += kQueryBlock) {
      const int64_t r = s.row + i0;
      attend_block(att_.data() + r * HD + h * D, HD, q_.data() + r * HD + h * D, HD, std::min(kQueryBlock, s.len - i0),
                   kv, s.parent_len + i0 + 1, window, D, T, scale, sc, sc + kQueryBlock * T);
    }
  }
}

// The rows [0, rows) of the batch continue the cache's first `past` rows; their keys and values
// are already in the cache after them (one layer's k, v: (seq_len, KVH * D)).
void SegmentForward::attention_cached(const float* k, const float* v, int64_t past, int64_t rows, int64_t window) {
  const int64_t H = cfg_.n_head, KVH = cfg_.n_kv_head, D = cfg_.head_dim, HD = H * D, KD = KVH * D, group = H / KVH,
                T = cfg_.seq_len;
  const float scale = 1.0f / std::sqrt(float(D));
  const size_t per_thread = size_t(kQueryBlock * (T + D));
  if (scratch_.size() < size_t(ctx_.threads()) * per_thread) scratch_.resize(size_t(ctx_.threads()) * per_thread);
  const int64_t blocks = (rows + kQueryBlock - 1) / kQueryBlock;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ctx_.threads())
  for (int64_t task = 0; task < H * blocks; ++task) {
    const int64_t h = task % H, i0 = (task / H) * kQueryBlock, g = h / group;
    float* sc = scratch_.data() + size_t(omp_get_thread_num()) * per_thread;
    const KeyRows kv{k + g * D, v + g * D, KD, 0, past, past};  // every key is cache row j
    attend_block(att_.data() + i0 * HD + h * D, HD, q_.data() + i0 * HD + h * D, HD, std::min(kQueryBlock, rows - i0),
                 kv, past + i0 + 1, window, D, T, scale, sc, sc + kQueryBlock * T);
  }
}

}  // namespace nt
