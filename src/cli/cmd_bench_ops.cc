// SPDX-License-Identifier: MIT
// `nanotrain bench`'s kernel table beyond the GEMMs: attention, the elementwise kernels, the
// loss, and the optimizer's. The elementwise kernels' FLOPs are their formulas' arithmetic per
// element (ops_ref.h; an FMA counts 2), enough to place them on the roofline.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/bench.h"
#include "composed/newton_schulz_bf16.h"
#include "optim/optimizer.h"

namespace nt::cli::bench {

namespace {

// Causal QK^T and PV (2 GEMMs of (query, visible key) pairs x D per head, T*(T+1)/2 pairs
// without a window); the backward recomputes S and does 4 more. window: kernels.h's, suffix
// names the rows.
void bench_attention_window(KernelRows& r, int64_t window, const std::string& suffix) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const int64_t B = r.B, N = r.N, H = r.H, D = r.D, T = r.T, W = window;
  const double fma = r.peaks.fma, pbf16 = r.peaks.bf16_gflops;
  auto &a = r.a, &b = r.b, &cbuf = r.cbuf, &d = r.d, &e = r.e;
  double pairs = 0;  // (query, key) pairs a head computes
  for (int64_t t = 0; t < T; ++t) pairs += double(std::min(t, W) + 1);
  const double fwd_fl = 2.0 * 2.0 * double(B) * H * pairs * D;
  // fp32 q, k, v in, O and the log-sum-exp out; backward: q, k, v, O, dO and the log-sum-exp
  // in, dq, dk, dv out.
  const double qkvo = 4.0 * double(N) * H * D, lse_bytes = 4.0 * double(B) * H * T;
  const double fwd_bytes = 4 * qkvo + lse_bytes, bwd_bytes = 8 * qkvo + lse_bytes;
  Buffer<float> lse{size_t(B * H * T)};
  fill_rand(a.data(), size_t(N * H * D), 7, 1.0f);
  r.report("attention fwd" + suffix, r.time([&] {
    k.attention_fwd(ctx, d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D, W);
  }),
           fwd_fl, fwd_bytes, fma);
  k.attention_fwd(ctx, d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D, W);
  Buffer<float> dq{size_t(N * H * D)}, dk{size_t(N * H * D)}, dv{size_t(N * H * D)};
  r.report("attention bwd" + suffix, r.time([&] {
    k.attention_bwd(ctx, dq.data(), dk.data(), dv.data(), e.data(), a.data(), b.data(), cbuf.data(), d.data(),
                    lse.data(), B, T, H, H, D, W);
  }),
           2.5 * fwd_fl, bwd_bytes, fma);
  r.report("attention fwd bf16" + suffix, r.time([&] {
    k.attention_fwd_bf16(ctx, d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D, W);
  }),
           fwd_fl, fwd_bytes, pbf16);
  k.attention_fwd_bf16(ctx, d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D, W);
  r.report("attention bwd bf16" + suffix, r.time([&] {
    k.attention_bwd_bf16(ctx, dq.data(), dk.data(), dv.data(), e.data(), a.data(), b.data(), cbuf.data(), d.data(),
                         lse.data(), B, T, H, H, D, W);
  }),
           2.5 * fwd_fl, bwd_bytes, pbf16);
}

}  // namespace

// The causal attention, then (where it is shorter than the sequence) under the short window of
// --window-pattern's S layers at these shapes.
void bench_attention(KernelRows& r) {
  bench_attention_window(r, kFullWindow, "");
  ModelConfig c;
  c.seq_len = int(r.T);
  const int64_t w = c.short_window_keys();
  if (w < r.T - 1) bench_attention_window(r, w, " window " + std::to_string(w));
}

namespace {

void bench_norms_and_activations(KernelRows& r) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const int64_t N = r.N, C = r.C, F = r.F;
  const double fma = r.peaks.fma;
  auto &a = r.a, &b = r.b, &d = r.d, &e = r.e, &rstd = r.rstd;
  auto &ah = r.ah, &bh = r.bh, &ch = r.ch;
  r.report("rmsnorm fwd (N,C)", r.time([&] { k.rmsnorm_fwd(ctx, d.data(), rstd.data(), a.data(), N, C, 1e-6f); }),
           3.0 * N * C, 8.0 * N * C, fma);
  r.report("rmsnorm bwd (N,C)",
           r.time([&] { k.rmsnorm_bwd(ctx, e.data(), b.data(), d.data(), rstd.data(), N, C, true); }), 6.0 * N * C,
           16.0 * N * C, fma);
  r.report("relu2 fwd (N,F)", r.time([&] { k.relu2_fwd(ctx, d.data(), a.data(), N * F); }), 2.0 * N * F, 8.0 * N * F,
           fma);
  r.report("relu2 fwd bf16 (N,F)", r.time([&] { k.relu2_fwd_bf16(ctx, bh.data(), ah.data(), N * F); }), 2.0 * N * F,
           4.0 * N * F, fma);
  r.report("to_bf16 (N,F)", r.time([&] { k.to_bf16(ctx, ah.data(), a.data(), N * F); }), 0.0, 6.0 * N * F, fma);
  r.report("relu2 bwd (N,F)", r.time([&] { k.relu2_bwd(ctx, d.data(), b.data(), a.data(), N * F); }), 3.0 * N * F,
           12.0 * N * F, fma);
  r.report("relu2 bwd bf16 (N,F)", r.time([&] { k.relu2_bwd_bf16(ctx, ch.data(), bh.data(), ah.data(), N * F); }),
           3.0 * N * F, 6.0 * N * F, fma);
  // The other activations of bf16 runs (FLOPs: the vector code's arithmetic, tanh and exp as
  // their polynomials); SwiGLU over rows of [gate | up] of F / 2 each, the same bytes in.
  r.report("gelu fwd bf16 (N,F)", r.time([&] { k.gelu_fwd_bf16(ctx, bh.data(), ah.data(), N * F); }), 20.0 * N * F,
           4.0 * N * F, fma);
  r.report("gelu bwd bf16 (N,F)", r.time([&] { k.gelu_bwd_bf16(ctx, ch.data(), bh.data(), ah.data(), N * F); }),
           30.0 * N * F, 6.0 * N * F, fma);
  r.report("swiglu fwd bf16 (N,F/2)", r.time([&] { k.swiglu_fwd_bf16(ctx, bh.data(), ah.data(), N, F / 2); }),
           8.0 * N * F, 3.0 * N * F, fma);
  r.report("swiglu bwd bf16 (N,F/2)",
           r.time([&] { k.swiglu_bwd_bf16(ctx, ch.data(), bh.data(), ah.data(), N, F / 2); }), 12.0 * N * F,
           5.0 * N * F, fma);
  // As the bf16 step runs them: the forward keeps only the bf16 copy, the backward reads it.
  r.report("rmsnorm fwd bf16 (N,C)",
           r.time([&] { k.rmsnorm_fwd_bf16(ctx, nullptr, ch.data(), rstd.data(), a.data(), N, C, 1e-6f); }),
           3.0 * N * C, 6.0 * N * C, fma);
  r.report("rmsnorm bwd bf16 (N,C)",
           r.time([&] { k.rmsnorm_bwd_bf16(ctx, e.data(), ch.data(), b.data(), ah.data(), rstd.data(), N, C, true); }),
           6.0 * N * C, 16.0 * N * C, fma);
}

void bench_qkv_and_rotary(KernelRows& r) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const int64_t B = r.B, N = r.N, H = r.H, D = r.D, T = r.T;
  const double fma = r.peaks.fma;
  auto &a = r.a, &b = r.b, &cbuf = r.cbuf, &d = r.d, &e = r.e;
  auto& ch = r.ch;
  // The q, k, v gradients side by side as one bf16 operand (the three conversions of a step).
  const int64_t HD = H * D, KD = r.KVH * D, Q = HD + 2 * KD;
  r.report("to_bf16_rows (N,H*D+2*KVH*D)", r.time([&] {
    k.to_bf16_rows(ctx, ch.data(), Q, a.data(), N, HD);
    k.to_bf16_rows(ctx, ch.data() + HD, Q, b.data(), N, KD);
    k.to_bf16_rows(ctx, ch.data() + HD + KD, Q, cbuf.data(), N, KD);
  }),
           0.0, 6.0 * N * Q, fma);
  // Rotary + QK-norm on q, in place (its output stays normalised call after call), and the
  // backward from that output.
  Buffer<float> cs{size_t(T * D / 2)}, sn{size_t(T * D / 2)}, rq{size_t(N * H)};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < D / 2; ++j) {
      const double angle = double(t) * std::pow(10000.0, -2.0 * double(j) / double(D));
      cs[size_t(t * (D / 2) + j)] = float(std::cos(angle)), sn[size_t(t * (D / 2) + j)] = float(std::sin(angle));
    }
  r.report("rotary + qk-norm fwd (N,H*D)",
           r.time([&] { k.rope_norm_fwd(ctx, d.data(), rq.data(), cs.data(), sn.data(), B, T, H, D, 1e-6f); }),
           6.0 * N * HD, 8.0 * N * HD, fma);
  r.report("rotary + qk-norm bwd (N,H*D)",
           r.time([&] { k.rope_norm_bwd(ctx, e.data(), d.data(), rq.data(), cs.data(), sn.data(), B, T, H, D); }),
           8.0 * N * HD, 12.0 * N * HD, fma);
}

void bench_embedding_and_loss(KernelRows& r) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const int64_t N = r.N, C = r.C, V = r.V, R = r.R;
  const double fma = r.peaks.fma;
  auto &a = r.a, &b = r.b, &cbuf = r.cbuf, &d = r.d, &e = r.e, &g = r.g, &rstd = r.rstd;
  auto& ch = r.ch;
  std::vector<int32_t> ids(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) ids[size_t(i)] = int32_t((i * 7919) % V);
  r.report("embedding fwd (N,C)", r.time([&] { k.embed_fwd(ctx, d.data(), ids.data(), a.data(), N, C); }), 0.0,
           8.0 * N * C, fma);
  r.report("embedding bwd (N,C)", r.time([&] { k.embed_bwd(ctx, g.data(), e.data(), ids.data(), N, C); }), 1.0 * N * C,
           12.0 * N * C, fma);
  // A head chunk's logits (R rows): the fp32 loss writes its gradient over them, the bf16 one
  // into a bf16 operand. Each call after the first reads the previous call's output: the
  // same work (no value is special), with no copy inside the timing.
  std::vector<int32_t> tg(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i) tg[size_t(i)] = int32_t((i * 7919) % V);
  char name[64];
  // FLOPs as the AVX-512 code computes them, about 60 a logit (the tanh and the exp as
  // polynomials), far more than the 6-8 bytes a logit moves.
  constexpr double kXentFlops = 60;
  std::snprintf(name, sizeof name, "softcap xent + grad (%ld,V)", long(R));
  std::copy_n(b.data(), R * V, cbuf.data());
  r.report(name, r.time([&] { k.softcap_xent(ctx, cbuf.data(), rstd.data(), tg.data(), R, V, 15.0f, 1.0f); }),
           kXentFlops * R * V, 8.0 * R * V, fma);
  std::snprintf(name, sizeof name, "softcap xent + bf16 grad (%ld,V)", long(R));
  std::copy_n(b.data(), R * V, cbuf.data());
  r.report(name,
           r.time([&] { k.softcap_xent_bf16(ctx, cbuf.data(), rstd.data(), tg.data(), R, V, 15.0f, 1.0f, ch.data()); }),
           kXentFlops * R * V, 6.0 * R * V, fma);
}

// Muon on the MLP matrix (C x F after the transpose to rows <= cols), 5 iterations. FLOPs
// counted as run: every symmetric product as its triangle, the products with the iterate
// whole. The Gram iteration's chain (G G, P G, P (P G)) is fp32 in both versions, so the bf16
// row's peak is its mix's: its FLOPs over the time they take at the bf16 and fp32 peaks.
void bench_newton_schulz(KernelRows& r) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const double fma = r.peaks.fma, pbf16 = r.peaks.bf16_gflops;
  const int64_t m = r.C, n = r.F;
  Buffer<float> x{size_t(m * n)}, y{size_t(m * n)}, ga{size_t(m * m)}, gb{size_t(m * m)}, x0{size_t(m * n)};
  fill_rand(x0.data(), size_t(m * n), 11);  // each timed call starts from a copy (the iteration works in place)
  const int steps = 5;
  const double mc = double(m), nc = double(n), s = steps;
  const double chain = mc * mc * mc * (s + 2 * (s - 1));  // fp32 in both versions
  const double ends = 3 * mc * mc * nc + mc * mc * mc * (s - 1);  // G0, Q X0, the P Q chain
  const double plain = s * (3 * mc * mc * nc + mc * mc * mc);
  r.report("muon newton-schulz x5 (C,F)", r.time([&] {
             std::copy_n(x0.data(), m * n, x.data());
             newton_schulz(k, ctx, x.data(), y.data(), ga.data(), gb.data(), m, n, steps);
           }), newton_schulz_on_gram(m, n) ? ends + chain : plain, 8 * mc * nc, fma);
  NewtonSchulzBf16 ns;
  const bool gram = newton_schulz_bf16_on_gram(k, m, n);
  const double mixed_peak = gram ? (ends + chain) / (ends / pbf16 + chain / fma) : pbf16;
  r.report("muon newton-schulz x5 bf16 (C,F)", r.time([&] {
             std::copy_n(x0.data(), m * n, x.data());
             ns.run(k, ctx, x.data(), ga.data(), gb.data(), m, n, steps);
           }), gram ? ends + chain : plain, 8 * mc * nc, mixed_peak);
  // The attention's square matrices (C x C), iterated plainly.
  r.report("muon newton-schulz x5 bf16 (C,C)", r.time([&] {
             std::copy_n(x0.data(), m * m, x.data());
             ns.run(k, ctx, x.data(), ga.data(), gb.data(), m, m, steps);
           }), s * 4 * mc * mc * mc, 8 * mc * mc, pbf16);
}

}  // namespace

void bench_elementwise(KernelRows& r) {
  bench_norms_and_activations(r);
  bench_qkv_and_rotary(r);
  bench_embedding_and_loss(r);
}

void bench_optimizer_kernels(KernelRows& r) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const int64_t F = r.F, C = r.C, V = r.V;
  const double fma = r.peaks.fma;
  auto &a = r.a, &d = r.d, &e = r.e, &g = r.g;
  bench_newton_schulz(r);
  r.report("muon momentum (F*C)", r.time([&] { k.nesterov(ctx, d.data(), e.data(), a.data(), F * C, 0.95f); }),
           6.0 * F * C, 16.0 * F * C, fma);
  r.report("transpose (F,C)", r.time([&] { k.transpose(ctx, d.data(), a.data(), F, C); }), 0.0, 8.0 * F * C, fma);
  r.report("axpby (F*C)", r.time([&] { k.axpby(ctx, d.data(), a.data(), F * C, 0.5f, 0.5f); }), 3.0 * F * C,
           12.0 * F * C, fma);
  r.report("sum of squares (F*C)", r.time([&] { (void)k.sum_squares(ctx, a.data(), F * C); }), 2.0 * F * C, 4.0 * F * C,
           fma);
  r.report("adamw (V*C)", r.time([&] {
    k.adamw_step(ctx, d.data(), a.data(), e.data(), g.data(), V * C, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 0.5f, 0.5f);
  }),
           15.0 * V * C, 28.0 * V * C, fma);
}

}  // namespace nt::cli::bench
