// SPDX-License-Identifier: MIT
// RMSNorm without weight, and rotary embeddings: row-parallel, AVX2 inner loops.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/ref/ops_ref.h"
#include "backends/cpu/simd_avx2.h"
#include "profile/profile.h"

namespace nt::cpu {

namespace {
// The norms' row loops; convert(dst, src, n), where given, writes each finished row's bf16 copy
// while the row is in L1.
using ConvertRow = void (*)(uint16_t* dst, const float* src, int64_t n);

// out null: each row goes to a per-thread row, for its bf16 copy only.
void rmsnorm_fwd_rows(const ExecContext& ctx, float* out, uint16_t* out_h, float* rstd, const float* inp, int64_t rows,
                      int64_t dim, float eps, ConvertRow convert) {
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("rmsnorm fwd");
    std::vector<float> row(out ? 0 : size_t(dim));
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = inp + r * dim;
      const float s = 1.0f / std::sqrt(sum_sq(x, dim) / float(dim) + eps);
      rstd[r] = s;
      float* y = out ? out + r * dim : row.data();
      for (int64_t i = 0; i < dim; ++i) y[i] = x[i] * s;
      if (convert) convert(out_h + r * dim, y, dim);
    }
  }
}

// The normalised output from out, or widened from its bf16 copy out_h (then dinp_h may be out_h:
// a row is widened before its own copy is written). Rows are handed out 64 at a time: split
// statically, one thread's half could take up to twice the other's, and the other would wait at
// the barrier. The forward keeps its static split: handed out, it was no faster.
void rmsnorm_bwd_rows(const ExecContext& ctx, float* dinp, uint16_t* dinp_h, const float* dout, const float* out,
                      const uint16_t* out_h, const float* rstd, int64_t rows, int64_t dim, bool acc,
                      ConvertRow convert) {
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work("rmsnorm bwd");
    std::vector<float> row(out ? 0 : size_t(dim));
#pragma omp for schedule(dynamic, 64) nowait
    for (int64_t r = 0; r < rows; ++r) {
      const float* dy = dout + r * dim;
      const float* y = row.data();
      if (out) {
        y = out + r * dim;
      } else {
        const uint16_t* h = out_h + r * dim;
        for (int64_t i = 0; i < dim; ++i) row[size_t(i)] = ref::from_bf16_1(h[i]);
      }
      const float m = dot(dy, y, dim) / float(dim);
      const float s = rstd[r];
      float* dx = dinp + r * dim;
      if (acc)
        for (int64_t i = 0; i < dim; ++i) dx[i] += s * (dy[i] - y[i] * m);
      else
        for (int64_t i = 0; i < dim; ++i) dx[i] = s * (dy[i] - y[i] * m);
      if (convert) convert(dinp_h + r * dim, dx, dim);
    }
  }
}
}  // namespace

void rmsnorm_fwd(const ExecContext& ctx, float* out, float* rstd, const float* inp, int64_t rows, int64_t dim,
                 float eps) {
  rmsnorm_fwd_rows(ctx, out, nullptr, rstd, inp, rows, dim, eps, nullptr);
}
void rmsnorm_fwd_bf16_avx2(const ExecContext& ctx, float* out, uint16_t* out_h, float* rstd, const float* inp,
                           int64_t rows, int64_t dim, float eps) {
  rmsnorm_fwd_rows(ctx, out, out_h, rstd, inp, rows, dim, eps, to_bf16_row_avx2);
}
void rmsnorm_fwd_bf16_avx512(const ExecContext& ctx, float* out, uint16_t* out_h, float* rstd, const float* inp,
                             int64_t rows, int64_t dim, float eps) {
  rmsnorm_fwd_rows(ctx, out, out_h, rstd, inp, rows, dim, eps, to_bf16_row_avx512);
}

void rmsnorm_bwd(const ExecContext& ctx, float* dinp, const float* dout, const float* out, const float* rstd,
                 int64_t rows, int64_t dim, bool acc) {
  rmsnorm_bwd_rows(ctx, dinp, nullptr, dout, out, nullptr, rstd, rows, dim, acc, nullptr);
}
void rmsnorm_bwd_bf16_avx2(const ExecContext& ctx, float* dinp, uint16_t* dinp_h, const float* dout,
                           const uint16_t* out_h, const float* rstd, int64_t rows, int64_t dim, bool acc) {
  rmsnorm_bwd_rows(ctx, dinp, dinp_h, dout, nullptr, out_h, rstd, rows, dim, acc, to_bf16_row_avx2);
}
void rmsnorm_bwd_bf16_avx512(const ExecContext& ctx, float* dinp, uint16_t* dinp_h, const float* dout,
                             const uint16_t* out_h, const float* rstd, int64_t rows, int64_t dim, bool acc) {
  rmsnorm_bwd_rows(ctx, dinp, dinp_h, dout, nullptr, out_h, rstd, rows, dim, acc, to_bf16_row_avx512);
}

namespace {
// Every (batch, position, head) row of a (B, T, heads, D) tensor, over the threads, with its
// position's cos and sin tables: body(row index, cos row, sin row).
template <class Body>
void for_each_head_row(const ExecContext& ctx, int64_t batch, int64_t t, int64_t heads, int64_t half, const float* cos,
                       const float* sin, const char* zone, Body body) {
#pragma omp parallel num_threads(ctx.threads())
  {
    profile::WorkZone work(zone);
#pragma omp for collapse(2) schedule(static) nowait
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t p = 0; p < t; ++p)
        for (int64_t h = 0; h < heads; ++h) body((b * t + p) * heads + h, cos + p * half, sin + p * half);
  }
}

void rope(const ExecContext& ctx, float* x, const float* cos, const float* sin, int64_t batch, int64_t t, int64_t heads,
          int64_t d, float sign) {
  const int64_t half = d / 2;
  for_each_head_row(ctx, batch, t, heads, half, cos, sin, "rotary rows",
                    [&](int64_t row, const float* c, const float* s) {
                      float* v = x + row * d;
                      for (int64_t j = 0; j < half; ++j) {
                        const float sn = sign * s[j];
                        const float x1 = v[j], x2 = v[j + half];
                        v[j] = x1 * c[j] + x2 * sn;
                        v[j + half] = x2 * c[j] - x1 * sn;
                      }
                    });
}
}  // namespace

void rope_fwd(const ExecContext& ctx, float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h,
              int64_t d) {
  rope(ctx, x, cos, sin, b, t, h, d, 1.0f);
}
void rope_bwd(const ExecContext& ctx, float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h,
              int64_t d) {
  rope(ctx, x, cos, sin, b, t, h, d, -1.0f);
}

// The QK-norm fused with the rotary embedding: each head row of D floats is rotated, its sum of
// squares taken from the rotated values and scaled, while it is in the core's registers and L1
// (the two separate passes read and write q and k twice). Backward: the norm's gradient of the
// row, then the inverse rotation. (An odd D leaves its last element unrotated, as rope does.)
void rope_norm_fwd(const ExecContext& ctx, float* x, float* rstd, const float* cos, const float* sin, int64_t batch,
                   int64_t t, int64_t heads, int64_t d, float eps) {
  const int64_t half = d / 2;
  for_each_head_row(ctx, batch, t, heads, half, cos, sin, "rope norm rows",
                    [&](int64_t row, const float* c, const float* s) {
                      float* v = x + row * d;
                      float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
                      for (int64_t j = 0; j < half; ++j) {
                        const float x1 = v[j], x2 = v[j + half];
                        const float y1 = x1 * c[j] + x2 * s[j], y2 = x2 * c[j] - x1 * s[j];
                        v[j] = y1, v[j + half] = y2;
                        ss += y1 * y1 + y2 * y2;
                      }
                      for (int64_t i = 2 * half; i < d; ++i) ss += v[i] * v[i];
                      const float r = 1.0f / std::sqrt(ss / float(d) + eps);
                      rstd[row] = r;
#pragma omp simd
                      for (int64_t i = 0; i < d; ++i) v[i] *= r;
                    });
}

void rope_norm_bwd(const ExecContext& ctx, float* dx, const float* out, const float* rstd, const float* cos,
                   const float* sin, int64_t batch, int64_t t, int64_t heads, int64_t d) {
  const int64_t half = d / 2;
  for_each_head_row(ctx, batch, t, heads, half, cos, sin, "rope norm rows bwd",
                    [&](int64_t row, const float* c, const float* s) {
                      float* g = dx + row * d;
                      const float* y = out + row * d;
                      const float m = dot(g, y, d) / float(d), r = rstd[row];
    // dz = r (dy - y m) for the rotated row, then rotated back (the transpose: sin negated).
#pragma omp simd
                      for (int64_t j = 0; j < half; ++j) {
                        const float z1 = r * (g[j] - y[j] * m), z2 = r * (g[j + half] - y[j + half] * m);
                        g[j] = z1 * c[j] - z2 * s[j];
                        g[j + half] = z2 * c[j] + z1 * s[j];
                      }
                      for (int64_t i = 2 * half; i < d; ++i) g[i] = r * (g[i] - y[i] * m);
                    });
}

}  // namespace nt::cpu
