// SPDX-License-Identifier: MIT
// Declarations of the CPU backend's ops (same contracts as kernels/kernels.h).
#pragma once
#include <cstdint>

namespace nt::cpu {

void matmul(float* c, const float* a, const float* b, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float beta);
void rmsnorm_fwd(float* out, float* rstd, const float* inp, int64_t rows, int64_t dim, float eps);
void rmsnorm_bwd(float* dinp, const float* dout, const float* out, const float* rstd, int64_t rows, int64_t dim, bool acc);
void rope_fwd(float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h, int64_t d);
void rope_bwd(float* x, const float* cos, const float* sin, int64_t b, int64_t t, int64_t h, int64_t d);
void attention_fwd(float* out, float* lse, const float* q, const float* k, const float* v, int64_t b, int64_t t,
                   int64_t h, int64_t kvh, int64_t d);
void attention_bwd(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                   const float* v, const float* out, const float* lse, int64_t b, int64_t t, int64_t h,
                   int64_t kvh, int64_t d);
void relu2_fwd(float* out, const float* inp, int64_t n);
void relu2_bwd(float* dinp, const float* dout, const float* inp, int64_t n);
void softcap_xent(float* logits, float* losses, const int32_t* targets, int64_t rows, int64_t v, float cap,
                  float grad_scale);
void embed_fwd(float* out, const int32_t* ids, const float* wte, int64_t n, int64_t c);
void embed_bwd(float* dwte, const float* dout, const int32_t* ids, int64_t n, int64_t c);
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2, float eps,
                float wd, float bc1, float bc2);
void axpby(float* y, const float* x, int64_t n, float a, float b);
double sum_squares(const float* x, int64_t n);

// Mixed precision (kernels.h contracts); the _avx512 variants need avx512f/bw/bf16.
void matmul_bf16_onednn(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                        bool tb, float beta);
void matmul_bf16_widen(float* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, bool ta,
                       bool tb, float beta);
void matmul_bf16_out_onednn(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                            bool ta, bool tb);
void matmul_bf16_out_widen(uint16_t* c, const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k,
                           bool ta, bool tb);
void to_bf16_avx2(uint16_t* dst, const float* src, int64_t n);
void to_bf16_avx512(uint16_t* dst, const float* src, int64_t n);
void relu2_fwd_bf16_avx2(uint16_t* out, const float* inp, int64_t n);
void relu2_fwd_bf16_avx512(uint16_t* out, const float* inp, int64_t n);
void relu2_bwd_bf16_avx2(uint16_t* dinp, const float* dout, const float* inp, int64_t n);
void relu2_bwd_bf16_avx512(uint16_t* dinp, const float* dout, const float* inp, int64_t n);

}  // namespace nt::cpu
