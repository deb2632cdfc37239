// SPDX-License-Identifier: MIT
// The reference backend: ops_ref.h instantiated for float.
#include "backends/ref/ops_ref.h"
#include "backends/ref/ref_backend.h"
#include "kernels/kernels.h"

namespace nt {

namespace {
using namespace ref;
// The reference ops run on the calling thread and need no scratch: their table entries drop
// the context and call the plain function.
template <auto F>
struct IgnoreContext;
template <class R, class... A, R (*F)(A...)>
struct IgnoreContext<F> {
  static R call(const ExecContext&, A... a) { return F(a...); }
};
template <auto F>
constexpr auto plain = &IgnoreContext<F>::call;

void rope_fwd_f(float* x, const float* c, const float* s, int64_t b, int64_t t, int64_t h, int64_t d) {
  rope_apply<float>(x, c, s, b, t, h, d, 1.0f);
}
void rope_bwd_f(float* x, const float* c, const float* s, int64_t b, int64_t t, int64_t h, int64_t d) {
  rope_apply<float>(x, c, s, b, t, h, d, -1.0f);
}
void softcap_xent_bf16_f(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                         float grad_scale, uint16_t* dlogits) {
  softcap_xent_bf16(logits, losses, targets, rows, v, cap, grad_scale, dlogits);
}
void attention_fwd_f(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b, int64_t t,
                     int64_t h, int64_t kvh, int64_t d, int64_t window) {
  attention_fwd<float>(out, lse, q, k, v, b, t, h, kvh, d, window);
}
void attention_bwd_f(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                     const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h, int64_t kvh,
                     int64_t d, int64_t window) {
  attention_bwd<float>(dq, dk, dv, dout, q, k, v, out, lse, b, t, h, kvh, d, window);
}
}  // namespace

const KernelTable& ref_kernels() {
  static const KernelTable t = {
      .name = "ref",
      .caps = {.fp32 = true, .bf16 = true},
      .matmul = plain<&matmul<float>>,
      .rmsnorm_fwd = plain<&rmsnorm_fwd<float>>,
      .rmsnorm_bwd = plain<&rmsnorm_bwd<float>>,
      .rope_fwd = plain<&rope_fwd_f>,
      .rope_bwd = plain<&rope_bwd_f>,
      .rope_norm_fwd = plain<&rope_norm_fwd<float>>,
      .rope_norm_bwd = plain<&rope_norm_bwd<float>>,
      .attention_fwd = plain<&attention_fwd_f>,
      .attention_bwd = plain<&attention_bwd_f>,
      .relu2_fwd = plain<&relu2_fwd<float>>,
      .relu2_bwd = plain<&relu2_bwd<float>>,
      .gelu_fwd = plain<&gelu_fwd<float>>,
      .gelu_bwd = plain<&gelu_bwd<float>>,
      .swiglu_fwd = plain<&swiglu_fwd<float>>,
      .swiglu_bwd = plain<&swiglu_bwd<float>>,
      .softcap_xent = plain<&softcap_xent<float>>,
      .embed_fwd = plain<&embed_fwd<float>>,
      .embed_bwd = plain<&embed_bwd<float>>,
      .adamw_step = plain<&adamw_step<float>>,
      .axpby = plain<&axpby<float>>,
      .nesterov = plain<&nesterov<float>>,
      .transpose = plain<&transpose<float>>,
      .sum_squares = plain<&sum_squares<float>>,
      .to_bf16 = plain<&ref::to_bf16>,
      .to_bf16_rows = plain<&ref::to_bf16_rows>,
      .rmsnorm_fwd_bf16 = plain<&ref::rmsnorm_fwd_bf16>,
      .rmsnorm_bwd_bf16 = plain<&ref::rmsnorm_bwd_bf16>,
      .relu2_fwd_bf16 = plain<&ref::relu2_fwd_bf16>,
      .relu2_bwd_bf16 = plain<&ref::relu2_bwd_bf16>,
      .gelu_fwd_bf16 = plain<&ref::gelu_fwd_bf16>,
      .gelu_bwd_bf16 = plain<&ref::gelu_bwd_bf16>,
      .swiglu_fwd_bf16 = plain<&ref::swiglu_fwd_bf16>,
      .swiglu_bwd_bf16 = plain<&ref::swiglu_bwd_bf16>,
      .matmul_bf16 = plain<&matmul_bf16<float>>,
      .matmul_bf16_out = plain<&ref::matmul_bf16_out>,
      .softcap_xent_bf16 = plain<&softcap_xent_bf16_f>,
      .attention_fwd_bf16 = plain<&attention_fwd_bf16<float>>,
      .attention_bwd_bf16 = plain<&attention_bwd_bf16<float>>,
  };
  static const bool checked = (validate(t), true);
  (void)checked;
  return t;
}

}  // namespace nt
