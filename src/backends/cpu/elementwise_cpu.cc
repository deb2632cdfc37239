// SPDX-License-Identifier: MIT
// Elementwise and small reduction ops: ReLU^2, embedding, AdamW, axpby, Nesterov momentum, sum of
// squares, and the transpose of Muon's tall matrices.
// All are memory-bound; each but the transpose is a single pass over contiguous data.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/simd_avx2.h"
#include "backends/cpu/chunked.h"
#include "profile/profile.h"

namespace nt::cpu {

// GCC does not vectorise the ternaries below with `omp simd` (it emits a scalar loop with a
// branch that mispredicts on random signs): explicit AVX2, in chunks per thread (chunked.h).

void relu2_row(float* out, const float* inp, int64_t n) {
  const __m256 z = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 r = _mm256_max_ps(_mm256_loadu_ps(inp + i), z);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(r, r));
  }
  for (; i < n; ++i) {
    const float r = inp[i] > 0.0f ? inp[i] : 0.0f;
    out[i] = r * r;
  }
}

void relu2_fwd(const ExecContext& ctx, float* out, const float* inp, int64_t n) {
  chunked(ctx, n, [=](int64_t i, int64_t end) { relu2_row(out + i, inp + i, end - i); });
}

void relu2_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* inp, int64_t n) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    const __m256 z = _mm256_setzero_ps(), two = _mm256_set1_ps(2.0f);
    for (; i + 8 <= end; i += 8) {
      const __m256 r = _mm256_max_ps(_mm256_loadu_ps(inp + i), z);
      _mm256_storeu_ps(dinp + i, _mm256_mul_ps(_mm256_mul_ps(two, r), _mm256_loadu_ps(dout + i)));
    }
    for (; i < end; ++i) dinp[i] = inp[i] > 0.0f ? 2.0f * inp[i] * dout[i] : 0.0f;
  });
}

void embed_fwd(const ExecContext& ctx, float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c) {
#pragma omp parallel for schedule(static) num_threads(ctx.threads())
  for (int64_t i = 0; i < n; ++i) std::copy_n(wte + int64_t(ids[i]) * c, c, out + i * c);
}

// Each thread owns a range of channels for every row, so no two threads write one element and
// the summation order over rows is fixed: deterministic for any thread count.
void embed_bwd(const ExecContext& ctx, float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c) {
#pragma omp parallel num_threads(ctx.threads())
  {
    const int64_t nth = omp_get_num_threads(), th = omp_get_thread_num();
    const int64_t chunk = (c + nth - 1) / nth;
    const int64_t c0 = std::min(c, th * chunk), c1 = std::min(c, c0 + chunk);
    for (int64_t i = 0; i < n; ++i) {
      float* dst = dwte + int64_t(ids[i]) * c;
      const float* src = dout + i * c;
      for (int64_t j = c0; j < c1; ++j) dst[j] += src[j];
    }
  }
}

void adamw_step(const ExecContext& ctx, float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1,
                float b2, float eps, float wd, float bc1, float bc2) {
  const float decay = 1.0f - lr * wd, step = lr / bc1, inv_bc2 = 1.0f / bc2;
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    const __m256 vb1 = _mm256_set1_ps(b1), vb2 = _mm256_set1_ps(b2), c1 = _mm256_set1_ps(1.0f - b1),
                 c2 = _mm256_set1_ps(1.0f - b2), vdecay = _mm256_set1_ps(decay), vstep = _mm256_set1_ps(step),
                 vinv = _mm256_set1_ps(inv_bc2), veps = _mm256_set1_ps(eps);
    for (; i + 8 <= end; i += 8) {
      const __m256 gi = _mm256_loadu_ps(g + i);
      const __m256 mi = _mm256_add_ps(_mm256_mul_ps(vb1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
      const __m256 vi =
          _mm256_add_ps(_mm256_mul_ps(vb2, _mm256_loadu_ps(v + i)), _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
      _mm256_storeu_ps(m + i, mi);
      _mm256_storeu_ps(v + i, vi);
      const __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vi, vinv)), veps);
      const __m256 upd = _mm256_div_ps(_mm256_mul_ps(vstep, mi), den);
      _mm256_storeu_ps(p + i, _mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(p + i), vdecay), upd));
    }
    for (; i < end; ++i) {
      const float gi = g[i];
      const float mi = b1 * m[i] + (1.0f - b1) * gi;
      const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] = p[i] * decay - step * mi / (std::sqrt(vi * inv_bc2) + eps);
    }
  });
}

void axpby(const ExecContext& ctx, float* y, const float* x, int64_t n, float a, float b) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
    for (; i + 8 <= end; i += 8)
      _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(va, _mm256_loadu_ps(x + i)),
                                            _mm256_mul_ps(vb, _mm256_loadu_ps(y + i))));
    for (; i < end; ++i) y[i] = a * x[i] + b * y[i];
  });
}

void nesterov(const ExecContext& ctx, float* u, float* buf, const float* g, int64_t n, float mom) {
  chunked(ctx, n, [=](int64_t i, int64_t end) {
    const __m256 vm = _mm256_set1_ps(mom), v1 = _mm256_set1_ps(1.0f - mom);
    for (; i + 8 <= end; i += 8) {
      const __m256 gg = _mm256_mul_ps(v1, _mm256_loadu_ps(g + i));
      const __m256 b = _mm256_add_ps(_mm256_mul_ps(vm, _mm256_loadu_ps(buf + i)), gg);
      _mm256_storeu_ps(buf + i, b);
      _mm256_storeu_ps(u + i, _mm256_add_ps(_mm256_mul_ps(vm, b), gg));
    }
    for (; i < end; ++i) {
      buf[i] = mom * buf[i] + (1.0f - mom) * g[i];
      u[i] = mom * buf[i] + (1.0f - mom) * g[i];
    }
  });
}

// 8 x 8 blocks through registers (transpose_32bit), 64 of src's columns (dst's rows) a task: a
// scalar loop over 32 x 32 tiles would put the tile's 32 rows, 2-8 KiB apart, in one L1 set.
void transpose(const ExecContext& ctx, float* dst, const float* src, int64_t rows, int64_t cols) {
  constexpr int64_t kCols = 64;
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("transpose");
#pragma omp for schedule(static) nowait
    for (int64_t j0 = 0; j0 < cols; j0 += kCols)
      transpose_32bit(reinterpret_cast<uint32_t*>(dst + j0 * rows), rows, reinterpret_cast<const uint32_t*>(src + j0),
                      cols, rows, std::min(kCols, cols - j0));
  }
}

double sum_squares(const ExecContext& ctx, const float* x, int64_t n) {
  double total = 0;
  constexpr int64_t kChunk = 4096;
#pragma omp parallel for reduction(+ : total) schedule(static) num_threads(ctx.threads())
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) total += double(sum_sq(x + i0, std::min(kChunk, n - i0)));
  return total;
}

}  // namespace nt::cpu
