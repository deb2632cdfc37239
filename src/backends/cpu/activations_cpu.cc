// SPDX-License-Identifier: MIT
// The MLP's other activations, GELU (tanh form) and SwiGLU, forward and backward: one pass each,
// AVX2 (exp8 / tanh8 of simd_avx2.h), threaded in chunks as elementwise_cpu.cc's ReLU^2. The bf16
// versions run the same vector math on widened bf16 inputs and round each result once.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"
#include "backends/cpu/chunked.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {

constexpr float kGeluC = 0.7978845608028654f, kGeluA = 0.044715f;


// tanh(sqrt(2/pi) (x + a x^3)) for 8 lanes.
inline __m256 gelu_tanh8(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 inner =
      _mm256_mul_ps(_mm256_set1_ps(kGeluC), _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(kGeluA), x2), x, x));
  return tanh8(inner);
}

// GELU's derivative from x and t = gelu_tanh8(x).
inline __m256 gelu_grad8(__m256 x, __m256 t) {
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 dinner = _mm256_mul_ps(_mm256_set1_ps(kGeluC), _mm256_fmadd_ps(_mm256_set1_ps(3.0f * kGeluA), x2, one));
  const __m256 sech2 = _mm256_fnmadd_ps(t, t, one);
  return _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(half, x), sech2), dinner,
                         _mm256_mul_ps(half, _mm256_add_ps(one, t)));
}

inline __m256 sigmoid8(__m256 g) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

// A loop's last n < 8 elements, through the same vector code on a zero-padded copy (the tail
// keeps the vector numerics).
template <class F>
void tail(int64_t n, F op) {
  if (n > 0) op(n);
}

// 8 bf16 values widened to fp32 (exact), and 8 fp32 values rounded to bf16 (nearest even).
inline __m256 load_bf16x8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline void store_bf16x8(uint16_t* p, __m256 x) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), bf16x8(x)); }

// op(in0, in1, out) on 8 lanes over [i, end) of arrays of bf16: whole vectors, then the tail
// through the same code on zero-padded copies (in1 may be null).
template <class Op>
void bf16_lanes(const uint16_t* in0, const uint16_t* in1, uint16_t* out, int64_t i, int64_t end, Op op) {
  for (; i + 8 <= end; i += 8) op(in0 + i, in1 ? in1 + i : nullptr, out + i);
  if (i == end) return;
  alignas(16) uint16_t a[8] = {}, b[8] = {}, y[8];
  std::copy_n(in0 + i, end - i, a);
  if (in1) std::copy_n(in1 + i, end - i, b);
  op(a, b, y);
  std::copy_n(y, end - i, out + i);
}

}  // namespace

void gelu_fwd(const ExecContext& ctx, float* out, const float* inp, int64_t n) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= end; i += 8) {
      const __m256 x = _mm256_loadu_ps(inp + i);
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, gelu_tanh8(x))));
    }
    tail(end - i, [&](int64_t m) {
      alignas(32) float x[8] = {}, y[8];
      std::copy_n(inp + i, m, x);
      const __m256 v = _mm256_load_ps(x);
      _mm256_store_ps(y, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, gelu_tanh8(v))));
      std::copy_n(y, m, out + i);
    });
  });
}

void gelu_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t n) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    for (; i + 8 <= end; i += 8) {
      const __m256 x = _mm256_loadu_ps(inp + i);
      _mm256_storeu_ps(dinp + i, _mm256_mul_ps(_mm256_loadu_ps(dout + i), gelu_grad8(x, gelu_tanh8(x))));
    }
    tail(end - i, [&](int64_t m) {
      alignas(32) float x[8] = {}, d[8] = {}, y[8];
      std::copy_n(inp + i, m, x);
      std::copy_n(dout + i, m, d);
      const __m256 v = _mm256_load_ps(x);
      _mm256_store_ps(y, _mm256_mul_ps(_mm256_load_ps(d), gelu_grad8(v, gelu_tanh8(v))));
      std::copy_n(y, m, dinp + i);
    });
  });
}

// Rows are the unit of work (each a gate half and an up half); chunks of rows per thread.
void swiglu_fwd(const ExecContext& ctx, float* out, const float* inp, int64_t rows, int64_t f) {
  const int64_t per = std::max<int64_t>(1, kChunk / std::max<int64_t>(f, 1));
#pragma omp parallel for schedule(static) if (rows * f > 4 * kChunk) num_threads(ctx.threads())
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    for (int64_t r = r0; r < std::min(rows, r0 + per); ++r) {
      const float* g = inp + r * 2 * f;
      const float* u = g + f;
      float* o = out + r * f;
      int64_t j = 0;
      for (; j + 8 <= f; j += 8) {
        const __m256 gv = _mm256_loadu_ps(g + j);
        _mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_mul_ps(gv, sigmoid8(gv)), _mm256_loadu_ps(u + j)));
      }
      for (; j < f; ++j) o[j] = g[j] / (1.0f + std::exp(-g[j])) * u[j];
    }
  }
}

void swiglu_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t rows, int64_t f) {
  const int64_t per = std::max<int64_t>(1, kChunk / std::max<int64_t>(f, 1));
#pragma omp parallel for schedule(static) if (rows * f > 4 * kChunk) num_threads(ctx.threads())
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    for (int64_t r = r0; r < std::min(rows, r0 + per); ++r) {
      const float* g = inp + r * 2 * f;
      const float* u = g + f;
      const float* d = dout + r * f;
      float* dg = dinp + r * 2 * f;
      float* du = dg + f;
      const __m256 one = _mm256_set1_ps(1.0f);
      int64_t j = 0;
      for (; j + 8 <= f; j += 8) {
        const __m256 gv = _mm256_loadu_ps(g + j), uv = _mm256_loadu_ps(u + j), dv = _mm256_loadu_ps(d + j);
        const __m256 s = sigmoid8(gv);
        const __m256 dsilu = _mm256_mul_ps(s, _mm256_fmadd_ps(gv, _mm256_sub_ps(one, s), one));
        _mm256_storeu_ps(dg + j, _mm256_mul_ps(_mm256_mul_ps(dv, uv), dsilu));
        _mm256_storeu_ps(du + j, _mm256_mul_ps(dv, _mm256_mul_ps(gv, s)));
      }
      for (; j < f; ++j) {
        const float s = 1.0f / (1.0f + std::exp(-g[j]));
        const float gj = g[j], uj = u[j], dj = d[j];
        dg[j] = dj * uj * s * (1.0f + gj * (1.0f - s));
        du[j] = dj * gj * s;
      }
    }
  }
}

void gelu_fwd_bf16(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t n) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    bf16_lanes(inp, nullptr, out, i, end, [](const uint16_t* x, const uint16_t*, uint16_t* y) {
      const __m256 v = load_bf16x8(x);
      store_bf16x8(y, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v),
                                    _mm256_add_ps(_mm256_set1_ps(1.0f), gelu_tanh8(v))));
    });
  });
}

void gelu_bwd_bf16(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t n) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    bf16_lanes(inp, dout, dinp, i, end, [](const uint16_t* x, const uint16_t* d, uint16_t* y) {
      const __m256 v = load_bf16x8(x);
      store_bf16x8(y, _mm256_mul_ps(load_bf16x8(d), gelu_grad8(v, gelu_tanh8(v))));
    });
  });
}

void swiglu_fwd_bf16(const ExecContext& ctx, uint16_t* out, const uint16_t* inp, int64_t rows, int64_t f) {
  const int64_t per = std::max<int64_t>(1, kChunk / std::max<int64_t>(f, 1));
#pragma omp parallel for schedule(static) if (rows * f > 4 * kChunk) num_threads(ctx.threads())
  for (int64_t r0 = 0; r0 < rows; r0 += per)
    for (int64_t r = r0; r < std::min(rows, r0 + per); ++r)
      bf16_lanes(inp + r * 2 * f, inp + r * 2 * f + f, out + r * f, 0, f,
                 [](const uint16_t* g, const uint16_t* u, uint16_t* y) {
                   const __m256 gv = load_bf16x8(g);
                   store_bf16x8(y, _mm256_mul_ps(_mm256_mul_ps(gv, sigmoid8(gv)), load_bf16x8(u)));
                 });
}

// Each row's gate and up gradients: two outputs, so the lanes are walked here.
void swiglu_bwd_bf16(const ExecContext& ctx, uint16_t* dinp, const uint16_t* dout, const uint16_t* inp, int64_t rows,
                     int64_t f) {
  const int64_t per = std::max<int64_t>(1, kChunk / std::max<int64_t>(f, 1));
  auto lanes = [](const uint16_t* g, const uint16_t* u, const uint16_t* d, uint16_t* dg, uint16_t* du) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 gv = load_bf16x8(g), uv = load_bf16x8(u), dv = load_bf16x8(d);
    const __m256 s = sigmoid8(gv);
    const __m256 dsilu = _mm256_mul_ps(s, _mm256_fmadd_ps(gv, _mm256_sub_ps(one, s), one));
    store_bf16x8(dg, _mm256_mul_ps(_mm256_mul_ps(dv, uv), dsilu));
    store_bf16x8(du, _mm256_mul_ps(dv, _mm256_mul_ps(gv, s)));
  };
#pragma omp parallel for schedule(static) if (rows * f > 4 * kChunk) num_threads(ctx.threads())
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    for (int64_t r = r0; r < std::min(rows, r0 + per); ++r) {
      const uint16_t* g = inp + r * 2 * f;
      const uint16_t* u = g + f;
      const uint16_t* d = dout + r * f;
      uint16_t* dg = dinp + r * 2 * f;
      uint16_t* du = dg + f;
      int64_t j = 0;
      for (; j + 8 <= f; j += 8) lanes(g + j, u + j, d + j, dg + j, du + j);
      if (j == f) continue;
      alignas(16) uint16_t gp[8] = {}, up[8] = {}, dp[8] = {}, gy[8], uy[8];
      std::copy_n(g + j, f - j, gp), std::copy_n(u + j, f - j, up), std::copy_n(d + j, f - j, dp);
      lanes(gp, up, dp, gy, uy);
      std::copy_n(gy, f - j, dg + j), std::copy_n(uy, f - j, du + j);
    }
  }
}

}  // namespace nt::cpu
