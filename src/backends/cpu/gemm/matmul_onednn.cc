// SPDX-License-Identifier: MIT
// GEMMs through oneDNN: fp32 through sgemm and through the cached matmul primitive (brgemm), bf16
// operands with fp32 accumulation through cached primitives (its inner-product primitives for the
// linear-layer patterns, which run oneDNN's jit bf16 GEMM; its matmul primitive for the rest), and
// the AVX2 floor's bf16 products, widened to fp32 (bf16 x bf16 products are exact in fp32, so
// the result is the same GEMM).
//
// Primitives are cached by (m, n, k, transposes, beta, types, threads): a training step reuses a
// few dozen shapes, and building a primitive costs far more than running a small one. Transposes
// are strides, so no operand is copied. GEMMs are issued from the thread that drives the step
// (oneDNN threads them on the same OpenMP pool), or, for Muon, from every thread of a parallel
// region with one-thread contexts: each thread has its own cache (a primitive's memory objects
// hold the operands of the call in progress), and the thread count is part of the key because
// oneDNN builds a primitive for a thread count. oneDNN reads that count from OpenMP
// (omp_get_max_threads), so each call sets OpenMP's count to the context's while it runs.
#include <dnnl.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/ref/ops_ref.h"
#include "core/check.h"
#include "core/system.h"
#include "backends/cpu/mirror_upper.h"

namespace nt::cpu {

namespace {

// One cached GEMM: a oneDNN primitive, its three memory objects (data handles set per call)
// and the execute-argument ids they bind to. tmp: where a weight-gradient product lands before
// it is added into C (the inner product's backward has no accumulating form).
struct Prim {
  dnnl::primitive prim;
  dnnl::memory a, b, c;
  int arg_a = DNNL_ARG_SRC, arg_b = DNNL_ARG_WEIGHTS, arg_c = DNNL_ARG_DST;
  float beta = 0.0f;
  std::vector<float> tmp;
  bool reference = false;  // oneDNN chose its reference implementation (no jit for this CPU)
};

struct Cache {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool, float, bool, int64_t, bool, int>, std::unique_ptr<Prim>> prims;
};

Cache& cache() {
  thread_local Cache c;
  return c;
}

// OpenMP's thread count for this thread set to the context's while oneDNN builds or runs a
// primitive (oneDNN sizes its work from it), and restored after.
class OnednnThreads {
 public:
  explicit OnednnThreads(const ExecContext& ctx) : saved_(omp_get_max_threads()), set_(ctx.threads()) {
    if (set_ != saved_) omp_set_num_threads(set_);
  }
  ~OnednnThreads() {
    if (set_ != saved_) omp_set_num_threads(saved_);
  }
  OnednnThreads(const OnednnThreads&) = delete;
  OnednnThreads& operator=(const OnednnThreads&) = delete;

 private:
  int saved_, set_;
};

using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

// The model's GEMMs are linear layers, and oneDNN's inner-product primitives run them through
// its jit bf16 GEMM, faster than the matmul primitive's brgemm on this model's shapes (weight
// gradients gain most). Each transpose pattern maps to one direction:
//   C = A B^T -> forward (src A, weights B, dst C), any beta as a sum post-op;
//   C = A B   -> backward data (diff_dst A, weights B, diff_src C), beta 0;
//   C = A^T B -> backward weights (diff_dst A, src B, diff_weights C), fp32 C, any beta (via tmp).
// Returns false (and the caller builds a matmul) for anything else, or where oneDNN would fall
// back to a reference implementation.
bool make_inner_product(Prim& p, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, bool bf16_out) {
  Cache& cc = cache();
  const dt out = bf16_out ? dt::bf16 : dt::f32;
  auto fwd_hint = [&](int64_t mb, int64_t oc, int64_t ic) {
    const dnnl::memory::desc src({mb, ic}, dt::bf16, tag::ab), w({oc, ic}, dt::bf16, tag::ab),
        dst({mb, oc}, dt::bf16, tag::ab);
    return dnnl::inner_product_forward::primitive_desc(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src, w, dst), cc.eng);
  };
  auto usable = [](const auto& pd) { return std::string(pd.impl_info_str()).find("ref") == std::string::npos; };
  try {
    if (!ta && tb) {  // C(m, n) = A(m, k) B(n, k)^T
      const dnnl::memory::desc a({m, k}, dt::bf16, tag::ab), b({n, k}, dt::bf16, tag::ab), c({m, n}, out, tag::ab);
      dnnl::primitive_attr attr;
      if (beta != 0.0f) {
        dnnl::post_ops po;
        po.append_sum(beta);
        attr.set_post_ops(po);
      }
      dnnl::inner_product_forward::primitive_desc pd(
          dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, a, b, c), attr, cc.eng);
      if (!usable(pd)) return false;
      p.prim = dnnl::inner_product_forward(pd);
      p.a = dnnl::memory(a, cc.eng, DNNL_MEMORY_NONE), p.b = dnnl::memory(b, cc.eng, DNNL_MEMORY_NONE);
      p.c = dnnl::memory(c, cc.eng, DNNL_MEMORY_NONE);
      return true;
    }
    if (!ta && !tb && beta == 0.0f) {  // C(m, n) = A(m, k) B(k, n): dX = dY W
      const dnnl::memory::desc a({m, k}, dt::bf16, tag::ab), b({k, n}, dt::bf16, tag::ab), c({m, n}, out, tag::ab);
      dnnl::inner_product_backward_data::primitive_desc pd(dnnl::inner_product_backward_data::desc(c, b, a), cc.eng,
                                                           fwd_hint(m, k, n));
      if (!usable(pd)) return false;
      p.prim = dnnl::inner_product_backward_data(pd);
      p.arg_a = DNNL_ARG_DIFF_DST, p.arg_b = DNNL_ARG_WEIGHTS, p.arg_c = DNNL_ARG_DIFF_SRC;
      p.a = dnnl::memory(a, cc.eng, DNNL_MEMORY_NONE), p.b = dnnl::memory(b, cc.eng, DNNL_MEMORY_NONE);
      p.c = dnnl::memory(c, cc.eng, DNNL_MEMORY_NONE);
      return true;
    }
    if (ta && !tb && !bf16_out) {  // C(m, n) = A(k, m)^T B(k, n): dW = dY^T X
      const dnnl::memory::desc a({k, m}, dt::bf16, tag::ab), b({k, n}, dt::bf16, tag::ab), c({m, n}, dt::f32, tag::ab);
      dnnl::inner_product_backward_weights::primitive_desc pd(dnnl::inner_product_backward_weights::desc(b, c, a),
                                                              cc.eng, fwd_hint(k, m, n));
      if (!usable(pd)) return false;
      p.prim = dnnl::inner_product_backward_weights(pd);
      p.arg_a = DNNL_ARG_DIFF_DST, p.arg_b = DNNL_ARG_SRC, p.arg_c = DNNL_ARG_DIFF_WEIGHTS;
      p.a = dnnl::memory(a, cc.eng, DNNL_MEMORY_NONE), p.b = dnnl::memory(b, cc.eng, DNNL_MEMORY_NONE);
      p.c = dnnl::memory(c, cc.eng, DNNL_MEMORY_NONE);
      p.beta = beta;
      if (beta != 0.0f) p.tmp.resize(size_t(m * n));
      return true;
    }
  } catch (const dnnl::error&) {
    // Not supported here: the matmul primitive below does every case.
  }
  return false;
}

// bf16_out: C is bf16 (oneDNN rounds to nearest even), else fp32. ldc: C's row stride. f32_in:
// A and B are fp32 (matmul primitive only; C fp32).
Prim& get_prim(const ExecContext& ctx, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta, bool bf16_out,
               int64_t ldc, bool f32_in = false) {
  Cache& cc = cache();
  auto key = std::make_tuple(m, n, k, ta, tb, beta, bf16_out, ldc, f32_in, ctx.threads());
  auto it = cc.prims.find(key);
  if (it != cc.prims.end()) return *it->second;
  const OnednnThreads threads(ctx);
  auto p = std::make_unique<Prim>();
  // With AMX every product takes the matmul primitive: it runs on the tiles (brgemm), while the
  // inner product stays on its AVX-512 GEMM.
  static const bool amx = cpu_features().amx_bf16;
  if (f32_in || ldc != n || amx || !make_inner_product(*p, m, n, k, ta, tb, beta, bf16_out)) {
    const dt in = f32_in ? dt::f32 : dt::bf16;
    const dnnl::memory::desc a({m, k}, in, ta ? dims{1, m} : dims{k, 1});
    const dnnl::memory::desc b({k, n}, in, tb ? dims{1, k} : dims{n, 1});
    const dnnl::memory::desc c({m, n}, bf16_out ? dt::bf16 : dt::f32, dims{ldc, 1});
    dnnl::primitive_attr attr;
    if (beta != 0.0f) {
      dnnl::post_ops po;
      po.append_sum(beta);
      attr.set_post_ops(po);
    }
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, cc.eng);
      p->prim = dnnl::matmul(pd);
      p->reference = std::string(pd.impl_info_str()).find("ref") != std::string::npos;
    } catch (const dnnl::error& e) {
      NT_CHECK(false, "oneDNN %s matmul (m=%ld n=%ld k=%ld ta=%d tb=%d): %s", f32_in ? "fp32" : "bf16", long(m),
               long(n), long(k), int(ta), int(tb), e.what());
    }
    p->a = dnnl::memory(a, cc.eng, DNNL_MEMORY_NONE);
    p->b = dnnl::memory(b, cc.eng, DNNL_MEMORY_NONE);
    p->c = dnnl::memory(c, cc.eng, DNNL_MEMORY_NONE);
  }
  return *cc.prims.emplace(key, std::move(p)).first->second;
}

void sgemm(const ExecContext& ctx, char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const OnednnThreads threads(ctx);
  dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  NT_CHECK(st == dnnl_success, "dnnl_sgemm failed with status %d (m=%ld n=%ld k=%ld)", int(st), long(m), long(n),
           long(k));
}

void run(const ExecContext& ctx, Prim& p, const void* a, const void* b, void* c) {
  const OnednnThreads threads(ctx);
  p.a.set_data_handle(const_cast<void*>(a));
  p.b.set_data_handle(const_cast<void*>(b));
  p.c.set_data_handle(p.tmp.empty() ? c : p.tmp.data());
  p.prim.execute(cache().stream, {{p.arg_a, p.a}, {p.arg_b, p.b}, {p.arg_c, p.c}});
  if (!p.tmp.empty()) {  // C = tmp + beta C (fp32 C only)
    float* cf = static_cast<float*>(c);
    const float* t = p.tmp.data();
    const int64_t n = int64_t(p.tmp.size());
    const float beta = p.beta;
#pragma omp parallel for simd schedule(static) num_threads(ctx.threads())
    for (int64_t i = 0; i < n; ++i) cf[i] = t[i] + beta * cf[i];
  }
}

}  // namespace

void limit_onednn_isa() {
  if (std::getenv("NANOTRAIN_NO_AVX512")) (void)dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
  else if (std::getenv("NANOTRAIN_NO_AMX")) (void)dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx512_core_bf16);
}

void sgemm_onednn(const ExecContext& ctx, float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                  bool ta, bool tb, float beta) {
  const dnnl_dim_t lda = ta ? m : k, ldb = tb ? k : n;
  sgemm(ctx, ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, a, lda, b, ldb, beta, c, n);
}

void sgemm_upper_onednn(const ExecContext& ctx, float* c, const float* a, int64_t m, int64_t k) {
  for_each_upper_block_row(m, [&](int64_t i0, int64_t rows) {
    sgemm(ctx, 'N', 'T', rows, m - i0, k, a + i0 * k, k, a + i0 * k, k, 0.0f, c + i0 * m + i0, m);
  });
  cpu::mirror_upper_triangle(ctx, c, m);  // exactly symmetric
}

bool matmul_f32_brgemm(const ExecContext& ctx, float* c, int64_t ldc, const float* a, const float* b, int64_t m,
                       int64_t n, int64_t k, bool ta, bool tb, float beta) {
  Prim& p = get_prim(ctx, m, n, k, ta, tb, beta, false, ldc, true);
  if (p.reference) return false;
  run(ctx, p, a, b, c);
  return true;
}

void matmul_bf16_onednn(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                        int64_t k, bool ta, bool tb, float beta) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  if (is_gram(a, b, ta, tb, m, n, k, beta, ctx.threads())) {
    for_each_upper_block_row(m, [&](int64_t i0, int64_t rows) {
      run(ctx, get_prim(ctx, rows, m - i0, k, false, true, 0.0f, false, m), a + i0 * k, a + i0 * k, c + i0 * m + i0);
    });
    cpu::mirror_upper_triangle(ctx, c, m);
    return;
  }
  run(ctx, get_prim(ctx, m, n, k, ta, tb, beta, false, n), a, b, c);
}

void matmul_bf16_out_onednn(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                            int64_t n, int64_t k, bool ta, bool tb) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::memset(c, 0, size_t(m * n) * sizeof(uint16_t));
    return;
  }
  run(ctx, get_prim(ctx, m, n, k, ta, tb, 0.0f, true, n), a, b, c);
}

void widen_then_matmul(const ExecContext& ctx, float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n,
                       int64_t k, bool ta, bool tb, float beta) {
  // One operand passed twice (the Gram product X X^T of Muon's Newton-Schulz) is widened once
  // and passed twice, so that matmul takes its Gram path: the result exactly symmetric, as the
  // AVX-512-BF16 and AMX paths give it.
  const bool same = a == b && m * k == k * n;
  float* af = static_cast<float*>(thread_scratch(ctx, kScratchWidenA, size_t(m * k) * sizeof(float)));
  float* bf = same ? af : static_cast<float*>(thread_scratch(ctx, kScratchWidenB, size_t(k * n) * sizeof(float)));
#pragma omp parallel for simd schedule(static) num_threads(ctx.threads())
  for (int64_t i = 0; i < m * k; ++i) af[i] = ref::from_bf16_1(a[i]);
  if (!same) {
#pragma omp parallel for simd schedule(static) num_threads(ctx.threads())
    for (int64_t i = 0; i < k * n; ++i) bf[i] = ref::from_bf16_1(b[i]);
  }
  matmul(ctx, c, af, bf, m, n, k, ta, tb, beta);
}

void widen_then_matmul_bf16_out(const ExecContext& ctx, uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m,
                                int64_t n, int64_t k, bool ta, bool tb) {
  float* cf = static_cast<float*>(thread_scratch(ctx, kScratchWidenC, size_t(m * n) * sizeof(float)));
  matmul_bf16_widen(ctx, cf, a, b, m, n, k, ta, tb, 0.0f);
  to_bf16_avx2(ctx, c, cf, m * n);
}

}  // namespace nt::cpu
