// SPDX-License-Identifier: MIT
// bf16 GEMM with fp32 accumulation through oneDNN's matmul primitive (brgemm kernels on
// AVX-512-BF16: 750-918 GFLOP/s on the model's shapes, PERF.md), and the fp32 -> bf16
// conversions' AVX2 floor.
//
// Primitives are cached by (m, n, k, transposes, beta, output type): a training step reuses a few dozen
// shapes, and building a primitive costs far more than running a small one. Transposes are
// strides, so no operand is copied. The cache is not thread-safe: GEMMs are issued from the
// thread that drives the step (oneDNN threads them on the same OpenMP pool).
//
// Without AVX-512-BF16 (the AVX2 floor) the operands are widened to fp32 and multiplied by
// sgemm: bf16 x bf16 products are exact in fp32, so the result is the same GEMM.
#include <dnnl.h>
#include <omp.h>

#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/ref/ops_ref.h"
#include "core/check.h"

namespace nt::cpu {

namespace {

struct Prim {
  dnnl::matmul prim;
  dnnl::memory a, b, c;
};

struct Cache {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool, float, bool, int64_t>, std::unique_ptr<Prim>> prims;
};

Cache& cache() {
  static Cache c;
  return c;
}

// bf16_out: C is bf16 (oneDNN rounds to nearest even), else fp32. ldc: C's row stride.
Prim& get_prim(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, bool bf16_out, int64_t ldc) {
  Cache& cc = cache();
  auto key = std::make_tuple(m, n, k, ta, tb, beta, bf16_out, ldc);
  auto it = cc.prims.find(key);
  if (it != cc.prims.end()) return *it->second;
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  const dnnl::memory::desc a({m, k}, dt::bf16, ta ? dims{1, m} : dims{k, 1});
  const dnnl::memory::desc b({k, n}, dt::bf16, tb ? dims{1, k} : dims{n, 1});
  const dnnl::memory::desc c({m, n}, bf16_out ? dt::bf16 : dt::f32, dims{ldc, 1});
  dnnl::primitive_attr attr;
  if (beta != 0.0f) {
    dnnl::post_ops po;
    po.append_sum(beta);
    attr.set_post_ops(po);
  }
  auto p = std::make_unique<Prim>();
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, cc.eng);
    p->prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    NT_CHECK(false, "oneDNN bf16 matmul (m=%ld n=%ld k=%ld ta=%d tb=%d): %s", long(m), long(n), long(k), int(ta),
             int(tb), e.what());
  }
  p->a = dnnl::memory(a, cc.eng, DNNL_MEMORY_NONE);
  p->b = dnnl::memory(b, cc.eng, DNNL_MEMORY_NONE);
  p->c = dnnl::memory(c, cc.eng, DNNL_MEMORY_NONE);
  return *cc.prims.emplace(key, std::move(p)).first->second;
}

}  // namespace

void matmul_bf16_onednn(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                        bool tb, float beta) {
  if (m == 0 || n == 0) return;
  NT_CHECK(!omp_in_parallel(), "matmul_bf16 must be called outside parallel regions");
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  auto run = [](Prim& p, const void* a, const void* b, void* c) {
    p.a.set_data_handle(const_cast<void*>(a));
    p.b.set_data_handle(const_cast<void*>(b));
    p.c.set_data_handle(c);
    p.prim.execute(cache().stream, {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
  };
  if (is_gram(a, b, ta, tb, m, n, k, beta)) {
    for_each_gram_block_row(m, [&](int64_t i0, int64_t rows) {
      run(get_prim(rows, m - i0, k, false, true, 0.0f, false, m), a + i0 * k, a + i0 * k, c + i0 * m + i0);
    });
    mirror_upper_triangle(c, m);
    return;
  }
  run(get_prim(m, n, k, ta, tb, beta, false, n), a, b, c);
}

void matmul_bf16_out_onednn(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                            bool ta, bool tb) {
  if (m == 0 || n == 0) return;
  NT_CHECK(!omp_in_parallel(), "matmul_bf16_out must be called outside parallel regions");
  if (k == 0) {
    std::memset(c, 0, size_t(m * n) * sizeof(uint16_t));
    return;
  }
  Prim& p = get_prim(m, n, k, ta, tb, 0.0f, true, n);
  p.a.set_data_handle(const_cast<uint16_t*>(a));
  p.b.set_data_handle(const_cast<uint16_t*>(b));
  p.c.set_data_handle(c);
  p.prim.execute(cache().stream, {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
}

void matmul_bf16_widen(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                       bool tb, float beta) {
  static std::vector<float> af, bf;
  af.resize(size_t(m * k));
  bf.resize(size_t(k * n));
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < m * k; ++i) af[size_t(i)] = ref::from_bf16_1(a[i]);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < k * n; ++i) bf[size_t(i)] = ref::from_bf16_1(b[i]);
  matmul(c, af.data(), bf.data(), m, n, k, ta, tb, beta);
}

// The AVX2 floor of the conversions: the reference's scalar rounding (nearest even on the bit
// pattern), which the compiler vectorises.
void to_bf16_avx2(uint16_t* dst, const float* src, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = ref::to_bf16_1(src[i]);
}

void matmul_bf16_out_widen(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                           bool ta, bool tb) {
  static std::vector<float> cf;
  cf.resize(size_t(m * n));
  matmul_bf16_widen(cf.data(), a, b, m, n, k, ta, tb, 0.0f);
  to_bf16_avx2(c, cf.data(), m * n);
}

void relu2_fwd_bf16_avx2(uint16_t* out, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float r = inp[i] > 0.0f ? inp[i] : 0.0f;
    out[i] = ref::to_bf16_1(r * r);
  }
}

void relu2_bwd_bf16_avx2(uint16_t* dinp, const float* dout, const float* inp, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float r = inp[i] > 0.0f ? inp[i] : 0.0f;
    dinp[i] = ref::to_bf16_1(2.0f * r * dout[i]);
  }
}

}  // namespace nt::cpu
