// SPDX-License-Identifier: MIT
// fp32 GEMM through oneDNN's sgemm (row-major), which reaches 80-96 % of this machine's fp32
// peak on the model's shapes (PERF.md); it runs on the same GNU OpenMP pool as our kernels.
#include <dnnl.h>

#include "backends/cpu/cpu_ops.h"
#include "core/check.h"

namespace nt::cpu {

void matmul(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta,
            bool tb, float beta) {
  if (m == 0 || n == 0) return;
  const dnnl_dim_t lda = ta ? m : k, ldb = tb ? k : n;
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, n);
  NT_CHECK(st == dnnl_success, "dnnl_sgemm failed with status %d (m=%ld n=%ld k=%ld)", int(st), long(m),
           long(n), long(k));
}

}  // namespace nt::cpu
