// SPDX-License-Identifier: MIT
// The reference kernels: plain loops, no threads, templated on the scalar type so that tests
// run them in double. They are the executable specification of every op in kernels/kernels.h
// (same argument order and accumulate semantics).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace nt::ref {

template <class T>
void matmul(T* c, const T* a, const T* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb, T beta) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T av = ta ? a[p * m + i] : a[i * k + p];
        const T bv = tb ? b[j * k + p] : b[p * n + j];
        s += av * bv;
      }
      c[i * n + j] = (beta == T(0) ? T(0) : beta * c[i * n + j]) + s;
    }
}

template <class T>
void rmsnorm_fwd(T* out, T* rstd, const T* inp, int64_t rows, int64_t dim, T eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = inp + r * dim;
    T ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += x[i] * x[i];
    const T s = T(1) / std::sqrt(ss / T(dim) + eps);
    rstd[r] = s;
    for (int64_t i = 0; i < dim; ++i) out[r * dim + i] = x[i] * s;
  }
}

// y = x * s with s = (mean(x^2) + eps)^-1/2: dx = s * (dy - y * mean(dy * y)).
template <class T>
void rmsnorm_bwd(T* dinp, const T* dout, const T* out, const T* rstd, int64_t rows, int64_t dim, bool acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dy = dout + r * dim;
    const T* y = out + r * dim;
    T dot = 0;
    for (int64_t i = 0; i < dim; ++i) dot += dy[i] * y[i];
    dot /= T(dim);
    for (int64_t i = 0; i < dim; ++i) {
      const T g = rstd[r] * (dy[i] - y[i] * dot);
      dinp[r * dim + i] = acc ? dinp[r * dim + i] + g : g;
    }
  }
}

template <class T>
void rope_apply(T* x, const T* cos, const T* sin, int64_t batch, int64_t t, int64_t heads, int64_t d, T sign) {
  const int64_t half = d / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < t; ++p)
      for (int64_t h = 0; h < heads; ++h) {
        T* v = x + ((b * t + p) * heads + h) * d;
        for (int64_t j = 0; j < half; ++j) {
          const T c = cos[p * half + j], s = sign * sin[p * half + j];
          const T x1 = v[j], x2 = v[j + half];
          v[j] = x1 * c + x2 * s;
          v[j + half] = -x1 * s + x2 * c;
        }
      }
}

// The fused QK-norm: the spec is the composition (rows of d, in place; see kernels.h).
template <class T>
void rope_norm_fwd(T* x, T* rstd, const T* cos, const T* sin, int64_t b, int64_t t, int64_t h, int64_t d, T eps) {
  rope_apply<T>(x, cos, sin, b, t, h, d, T(1));
  rmsnorm_fwd<T>(x, rstd, x, b * t * h, d, eps);
}
template <class T>
void rope_norm_bwd(T* dx, const T* out, const T* rstd, const T* cos, const T* sin, int64_t b, int64_t t, int64_t h,
                   int64_t d) {
  rmsnorm_bwd<T>(dx, dx, out, rstd, b * t * h, d, false);
  rope_apply<T>(dx, cos, sin, b, t, h, d, T(-1));
}

// round: applied to each exp(s - max) where it meets V, before O's row is divided by their sum
// (identity here; bf16 rounding in attention_fwd_bf16 below).
struct Exact {
  template <class T>
  T operator()(T x) const {
    return x;
  }
};

// window W: query i attends to keys max(0, i - W) .. i (kernels.h).
template <class T, class Round = Exact>
void attention_fwd(T* out, T* lse, const T* q, const T* k, const T* v, int64_t B, int64_t Tn, int64_t H,
                   int64_t KVH, int64_t D, int64_t W, Round round = {}) {
  const T scale = T(1) / std::sqrt(T(D));
  const int64_t group = H / KVH;
  std::vector<T> s(static_cast<size_t>(Tn));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const T* qi = q + ((b * Tn + i) * H + h) * D;
        T mx = -INFINITY;
        const int64_t j0 = std::max<int64_t>(0, i - W);
        for (int64_t j = j0; j <= i; ++j) {
          const T* kj = k + ((b * Tn + j) * KVH + h / group) * D;
          T dot = 0;
          for (int64_t e = 0; e < D; ++e) dot += qi[e] * kj[e];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        T l = 0;
        for (int64_t j = j0; j <= i; ++j) l += std::exp(s[j] - mx);
        T* oi = out + ((b * Tn + i) * H + h) * D;
        for (int64_t e = 0; e < D; ++e) oi[e] = 0;
        for (int64_t j = j0; j <= i; ++j) {
          const T p = round(std::exp(s[j] - mx));
          const T* vj = v + ((b * Tn + j) * KVH + h / group) * D;
          for (int64_t e = 0; e < D; ++e) oi[e] += p * vj[e];
        }
        for (int64_t e = 0; e < D; ++e) oi[e] /= l;
        lse[(b * H + h) * Tn + i] = mx + std::log(l);
      }
}

// round: applied to P and dS where they meet dO, K and Q; dout_di: the dout that D_i = dout . out
// is taken from (dout itself when null; the unrounded one in attention_bwd_bf16).
template <class T, class Round = Exact>
void attention_bwd(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const T* out,
                   const T* lse, int64_t B, int64_t Tn, int64_t H, int64_t KVH, int64_t D, int64_t W,
                   Round round = {}, const T* dout_di = nullptr) {
  if (!dout_di) dout_di = dout;
  const T scale = T(1) / std::sqrt(T(D));
  const int64_t group = H / KVH;
  std::fill(dq, dq + B * Tn * H * D, T(0));
  std::fill(dk, dk + B * Tn * KVH * D, T(0));
  std::fill(dv, dv + B * Tn * KVH * D, T(0));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Tn; ++i) {
        const int64_t qo = ((b * Tn + i) * H + h) * D;
        T di = 0;  // D_i = dout_i . out_i
        for (int64_t e = 0; e < D; ++e) di += dout_di[qo + e] * out[qo + e];
        const T l = lse[(b * H + h) * Tn + i];
        for (int64_t j = std::max<int64_t>(0, i - W); j <= i; ++j) {
          const int64_t ko = ((b * Tn + j) * KVH + h / group) * D;
          T sdot = 0, dp = 0;
          for (int64_t e = 0; e < D; ++e) {
            sdot += q[qo + e] * k[ko + e];
            dp += dout[qo + e] * v[ko + e];
          }
          const T p = std::exp(sdot * scale - l);
          const T ds = round(p * (dp - di) * scale), pr = round(p);
          for (int64_t e = 0; e < D; ++e) {
            dq[qo + e] += ds * k[ko + e];
            dk[ko + e] += ds * q[qo + e];
            dv[ko + e] += pr * dout[qo + e];
          }
        }
      }
}

template <class T>
void relu2_fwd(T* out, const T* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T r = inp[i] > T(0) ? inp[i] : T(0);
    out[i] = r * r;
  }
}

template <class T>
void relu2_bwd(T* dinp, const T* dout, const T* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dinp[i] = inp[i] > T(0) ? T(2) * inp[i] * dout[i] : T(0);
}

// GELU, tanh form (kernels.h).
template <class T>
void gelu_fwd(T* out, const T* inp, int64_t n) {
  const T c = T(0.7978845608028654), a = T(0.044715);
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    out[i] = T(0.5) * x * (T(1) + std::tanh(c * (x + a * x * x * x)));
  }
}

template <class T>
void gelu_bwd(T* dinp, const T* dout, const T* inp, int64_t n) {
  const T c = T(0.7978845608028654), a = T(0.044715);
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i], t = std::tanh(c * (x + a * x * x * x));
    dinp[i] = dout[i] * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3) * a * x * x));
  }
}

template <class T>
void swiglu_fwd(T* out, const T* inp, int64_t rows, int64_t f) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < f; ++j) {
      const T g = inp[r * 2 * f + j], u = inp[r * 2 * f + f + j];
      out[r * f + j] = g / (T(1) + std::exp(-g)) * u;
    }
}

template <class T>
void swiglu_bwd(T* dinp, const T* dout, const T* inp, int64_t rows, int64_t f) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < f; ++j) {
      const T g = inp[r * 2 * f + j], u = inp[r * 2 * f + f + j], d = dout[r * f + j];
      const T s = T(1) / (T(1) + std::exp(-g));
      dinp[r * 2 * f + j] = d * u * s * (T(1) + g * (T(1) - s));
      dinp[r * 2 * f + f + j] = d * g * s;
    }
}

template <class T>
void softcap_xent(T* logits, T* losses, const int32_t* targets, int64_t rows, int64_t V, T cap, T grad_scale) {
  std::vector<T> z(static_cast<size_t>(V));
  for (int64_t r = 0; r < rows; ++r) {
    T* l = logits + r * V;
    if (targets[r] < 0) {
      losses[r] = 0;
      if (grad_scale != T(0)) std::fill(l, l + V, T(0));
      continue;
    }
    T mx = -INFINITY;
    for (int64_t i = 0; i < V; ++i) {
      z[i] = cap > T(0) ? cap * std::tanh(l[i] / cap) : l[i];
      mx = std::max(mx, z[i]);
    }
    T sum = 0;
    for (int64_t i = 0; i < V; ++i) sum += std::exp(z[i] - mx);
    const T lse = mx + std::log(sum);
    losses[r] = lse - z[targets[r]];
    if (grad_scale != T(0))
      for (int64_t i = 0; i < V; ++i) {
        const T p = std::exp(z[i] - lse) - (i == targets[r] ? T(1) : T(0));
        const T t = cap > T(0) ? z[i] / cap : T(0);
        l[i] = grad_scale * p * (T(1) - t * t);
      }
  }
}

template <class T>
void embed_fwd(T* out, const int32_t* ids, const T* wte, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) out[i * c + j] = wte[int64_t(ids[i]) * c + j];
}

template <class T>
void embed_bwd(T* dwte, const T* dout, const int32_t* ids, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) dwte[int64_t(ids[i]) * c + j] += dout[i * c + j];
}

template <class T>
void adamw_step(T* p, const T* g, T* m, T* v, int64_t n, T lr, T b1, T b2, T eps, T wd, T bc1, T bc2) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (T(1) - b1) * g[i];
    v[i] = b2 * v[i] + (T(1) - b2) * g[i] * g[i];
    p[i] *= T(1) - lr * wd;
    p[i] -= lr * (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps);
  }
}

template <class T>
void axpby(T* y, const T* x, int64_t n, T a, T b) {
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
}

template <class T>
void nesterov(T* u, T* buf, const T* g, int64_t n, T mom) {
  for (int64_t i = 0; i < n; ++i) {
    buf[i] = mom * buf[i] + (T(1) - mom) * g[i];
    u[i] = mom * buf[i] + (T(1) - mom) * g[i];
  }
}

template <class T>
void transpose(T* dst, const T* src, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}

template <class T>
double sum_squares(const T* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

// ---- bf16 (the executable spec of the mixed-precision ops) ----

// fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t to_bf16_1(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float from_bf16_1(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

inline void to_bf16(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16_1(src[i]);
}
inline void rmsnorm_fwd_bf16(float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows, int64_t dim,
                             float eps) {
  std::vector<float> y(static_cast<size_t>(rows * dim));
  rmsnorm_fwd<float>(y.data(), rstd, inp, rows, dim, eps);
  to_bf16(out_h, y.data(), rows * dim);
  if (out) std::copy(y.begin(), y.end(), out);
}
inline void rmsnorm_bwd_bf16(float* dinp, uint16_t* dinp_h, const float* dout, const uint16_t* out_h, const float* rstd,
                             int64_t rows, int64_t dim, bool acc) {
  std::vector<float> y(static_cast<size_t>(rows * dim));
  for (size_t i = 0; i < y.size(); ++i) y[i] = from_bf16_1(out_h[i]);
  rmsnorm_bwd<float>(dinp, dout, y.data(), rstd, rows, dim, acc);
  to_bf16(dinp_h, dinp, rows * dim);
}
inline void to_bf16_rows(uint16_t* dst, int64_t ld_dst, const float* src, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) to_bf16(dst + r * ld_dst, src + r * cols, cols);
}
inline void relu2_fwd_bf16(uint16_t* out, const uint16_t* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = from_bf16_1(inp[i]), r = x > 0.0f ? x : 0.0f;
    out[i] = to_bf16_1(r * r);
  }
}
inline void relu2_bwd_bf16(uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = from_bf16_1(inp[i]);
    dinp[i] = to_bf16_1(x > 0.0f ? 2.0f * x * from_bf16_1(dout[i]) : 0.0f);
  }
}
// The other activations in bf16: the fp32 spec of the widened inputs, each result rounded once.
inline void gelu_fwd_bf16(uint16_t* out, const uint16_t* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = from_bf16_1(inp[i]);
    float y;
    gelu_fwd<float>(&y, &x, 1);
    out[i] = to_bf16_1(y);
  }
}
inline void gelu_bwd_bf16(uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = from_bf16_1(inp[i]), d = from_bf16_1(dout[i]);
    float g;
    gelu_bwd<float>(&g, &d, &x, 1);
    dinp[i] = to_bf16_1(g);
  }
}
inline void swiglu_fwd_bf16(uint16_t* out, const uint16_t* inp, int64_t rows, int64_t f) {
  std::vector<float> in(static_cast<size_t>(2 * f)), y(static_cast<size_t>(f));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < 2 * f; ++j) in[size_t(j)] = from_bf16_1(inp[r * 2 * f + j]);
    swiglu_fwd<float>(y.data(), in.data(), 1, f);
    to_bf16(out + r * f, y.data(), f);
  }
}
inline void swiglu_bwd_bf16(uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t rows, int64_t f) {
  std::vector<float> in(static_cast<size_t>(2 * f)), d(static_cast<size_t>(f)), g(static_cast<size_t>(2 * f));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < 2 * f; ++j) in[size_t(j)] = from_bf16_1(inp[r * 2 * f + j]);
    for (int64_t j = 0; j < f; ++j) d[size_t(j)] = from_bf16_1(dout[r * f + j]);
    swiglu_bwd<float>(g.data(), d.data(), in.data(), 1, f);
    to_bf16(dinp + r * 2 * f, g.data(), 2 * f);
  }
}
// The bf16 GEMM is the fp32 GEMM of the widened operands (bf16 x bf16 products are exact in
// fp32); T = double gives the exact reference for tests.
template <class T>
void matmul_bf16(T* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                 T beta) {
  std::vector<T> af(size_t(m * k)), bf(size_t(k * n));
  for (size_t i = 0; i < af.size(); ++i) af[i] = T(from_bf16_1(a[i]));
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = T(from_bf16_1(b[i]));
  matmul<T>(c, af.data(), bf.data(), m, n, k, ta, tb, beta);
}
// The fp32 GEMM of the widened operands, rounded to bf16 once at the end.
inline void matmul_bf16_out(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                            bool ta, bool tb) {
  std::vector<float> cf(size_t(m * n));
  matmul_bf16<float>(cf.data(), a, b, m, n, k, ta, tb, 0.0f);
  to_bf16(c, cf.data(), m * n);
}

// softcap_xent's gradient rounded to bf16 into dlogits (logits is scratch afterwards).
inline void softcap_xent_bf16(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                              float grad_scale, uint16_t* dlogits) {
  softcap_xent<float>(logits, losses, targets, rows, v, cap, grad_scale);
  to_bf16(dlogits, logits, rows * v);
}

// Attention with bf16 products (kernels.h attention_*_bf16): attention_fwd / attention_bwd on
// bf16-rounded q, k, v, dout, with exp(s - max) (forward) and P, dS (backward) rounded to bf16
// where they become operands, and everything else (scores, softmax sums, lse, D_i = dout . out,
// accumulation) in T.
template <class T>
T round_bf16(T x) {
  return T(from_bf16_1(to_bf16_1(float(x))));
}
template <class T>
std::vector<T> rounded_bf16(const T* x, int64_t n) {
  std::vector<T> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[size_t(i)] = round_bf16(x[i]);
  return r;
}
struct RoundBf16 {
  template <class T>
  T operator()(T x) const {
    return round_bf16(x);
  }
};
template <class T>
void attention_fwd_bf16(T* out, T* lse, const T* q, const T* k, const T* v, int64_t B, int64_t Tn, int64_t H,
                        int64_t KVH, int64_t D, int64_t W) {
  const auto qh = rounded_bf16(q, B * Tn * H * D), kh = rounded_bf16(k, B * Tn * KVH * D),
             vh = rounded_bf16(v, B * Tn * KVH * D);
  attention_fwd(out, lse, qh.data(), kh.data(), vh.data(), B, Tn, H, KVH, D, W, RoundBf16{});
}
template <class T>
void attention_bwd_bf16(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v, const T* out,
                        const T* lse, int64_t B, int64_t Tn, int64_t H, int64_t KVH, int64_t D, int64_t W) {
  const auto qh = rounded_bf16(q, B * Tn * H * D), kh = rounded_bf16(k, B * Tn * KVH * D),
             vh = rounded_bf16(v, B * Tn * KVH * D), dh = rounded_bf16(dout, B * Tn * H * D);
  attention_bwd(dq, dk, dv, dh.data(), qh.data(), kh.data(), vh.data(), out, lse, B, Tn, H, KVH, D, W,
                RoundBf16{}, dout);
}

}  // namespace nt::ref
