// SPDX-License-Identifier: MIT
// `nanotrain bench`'s kernel table: the rows' bookkeeping, the GEMMs (with the variants the
// bf16 step runs), and the roofline chart. The other kernels are in cmd_bench_ops.cc.
#include <algorithm>
#include <cstdio>

#include "cli/bench.h"
#include "core/check.h"
#include "core/files.h"
#include "core/system.h"
#include "model/gpt.h"

namespace nt::cli::bench {

KernelRows::KernelRows(const Machine& m, const ModelConfig& c, int64_t batch, const Peaks& p, bool quick)
    : k(*m.kernels),
      ctx(m.threads > 0 ? m.threads : job_threads()),
      onednn(m.onednn),
      peaks(p),
      B(batch),
      N(batch * c.seq_len),
      C(c.d_model),
      F(c.mlp_dim()),
      V(c.vocab_size),
      H(c.n_head),
      KVH(c.n_kv_head),
      D(c.head_dim),
      T(c.seq_len),
      R(std::min(N, head_chunk_rows(V))),
      big(size_t(std::max({N * F, R * V, F * C, V * C}))),
      a{big},
      b{big},
      cbuf{big},
      d{big},
      e{big},
      g{big},
      rstd{size_t(N)},
      ah{big},
      bh{big},
      ch{big},
      quick_(quick) {
  fill_rand(a.data(), big, 1), fill_rand(b.data(), big, 2), fill_rand(cbuf.data(), big, 3);
  fill_rand(d.data(), big, 4), fill_rand(e.data(), big, 5);
  k.to_bf16(ctx, ah.data(), a.data(), int64_t(big));
  k.to_bf16(ctx, bh.data(), b.data(), int64_t(big));
}

// Each row: one call's FLOPs and compulsory bytes (operands read once, results written once),
// and its rate against the roof that bounds it at that intensity: GF/s against its compute
// peak, or GB/s against the bandwidth.
void KernelRows::report(const std::string& name, double sec, double flops, double bytes, double peak) {
  const profile::Roofs roofs{peaks.fma, peaks.bf16_gflops, peaks.triad};
  const profile::KernelRate kr{name, sec, flops, bytes, peak, peak != peaks.fma};
  const profile::RoofPlacement p = profile::place(roofs, kr);
  const bool per_flop = !p.memory_bound;
  char intensity[16] = "-";
  if (flops > 0) std::snprintf(intensity, sizeof intensity, "%.3g", p.intensity);
  std::printf("  %-34s %10.3f %7.1f %-4s %7.1f%% %8s\n", name.c_str(), sec * 1e3, per_flop ? p.gflops : p.gbs,
              per_flop ? "GF/s" : "GB/s", p.pct_roof, intensity);
  nlohmann::json j = {{"kernel", name},        {"ms", sec * 1e3},
                      {"gflop", flops * 1e-9}, {"gbyte", bytes * 1e-9},
                      {"gbs", p.gbs},          {"bound", p.memory_bound ? "memory" : "compute"},
                      {"peak_gflops", peak},   {"pct_roof", p.pct_roof}};
  if (flops > 0) j["gflops"] = p.gflops, j["flop_per_byte"] = p.intensity, j["roof_gflops"] = p.roof_gflops;
  json.push_back(j);
  rates.push_back(kr);
}

namespace {

struct Mm {
  const char* what;
  int64_t m, n, k;
  bool ta, tb;
  bool head_b = false;    // B is the head's weights: the model packs it once for every chunk
  bool bf16_out = false;  // the bf16 step writes C in bf16 (matmul_bf16_out)
  bool relu2 = false;     // the bf16 step reads relu²(fc) through the product (matmul_bf16_relu2)
};

// The bf16-C product with the MLP's activation, forward or backward, in its epilogue (the up
// product and the down product's data gradient, as the bf16 step runs them).
void bench_activation_epilogues(KernelRows& r, const Mm& s, double fl, double bf16_bytes) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const double pbf16 = r.peaks.bf16_gflops;
  auto &ah = r.ah, &bh = r.bh;
  char name[96];
  uint16_t* const c_h = reinterpret_cast<uint16_t*>(r.cbuf.data());
  uint16_t* const act_h = c_h + s.m * s.n;  // (cbuf holds m n floats: room for two bf16 C)
  if (s.bf16_out && s.tb && k.matmul_bf16_out_relu2) {  // the up product writing relu²(fc) too
    std::snprintf(name, sizeof name, "  bf16 C + relu2: %s", s.what);
    r.report(name,
             r.time([&] { k.matmul_bf16_out_relu2(ctx, c_h, act_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb); }),
             fl, bf16_bytes, pbf16);
  }
  if (s.bf16_out && !s.tb && k.matmul_bf16_out_relu2_bwd) {  // relu²'s gradient out of the product
    std::snprintf(name, sizeof name, "  bf16 C + relu2 bwd: %s", s.what);
    r.report(name, r.time([&] {
      k.matmul_bf16_out_relu2_bwd(ctx, c_h, act_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
    }),
             fl, bf16_bytes, pbf16);
  }
  if (s.bf16_out && s.tb && k.matmul_bf16_out_gelu) {  // the same with GELU (--mlp gelu)
    std::snprintf(name, sizeof name, "  bf16 C + gelu: %s", s.what);
    r.report(name,
             r.time([&] { k.matmul_bf16_out_gelu(ctx, c_h, act_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb); }),
             fl, bf16_bytes, pbf16);
  }
  if (s.bf16_out && !s.tb && k.matmul_bf16_out_gelu_bwd) {
    std::snprintf(name, sizeof name, "  bf16 C + gelu bwd: %s", s.what);
    r.report(name, r.time([&] {
      k.matmul_bf16_out_gelu_bwd(ctx, c_h, act_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
    }),
             fl, bf16_bytes, pbf16);
  }
}

// The indented rows under a product: the forms the bf16 step runs it in (packed B, bf16 C,
// the relu² and GELU epilogues, relu²'s prologue) and oneDNN's GEMM beside ours where ours takes
// it.
void bench_matmul_variants(KernelRows& r, const Mm& s, double fl, double bf16_bytes, double bf16_c_bytes) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const double pbf16 = r.peaks.bf16_gflops;
  const bool bf16 = r.peaks.bf16, amx = r.peaks.amx;
  auto& cbuf = r.cbuf;
  auto &ah = r.ah, &bh = r.bh;
  char name[96];
  if (s.head_b && k.matmul_bf16_packed_b) {  // the product alone, B packed beforehand
    Buffer<uint16_t> packed(size_t(k.packed_b_bf16_size(ctx, s.n, s.k)));
    k.pack_b_bf16(ctx, packed.data(), bh.data(), s.n, s.k, s.tb);
    std::snprintf(name, sizeof name, "  B packed once: %s", s.what);
    r.report(name, r.time([&] {
      k.matmul_bf16_packed_b(ctx, cbuf.data(), ah.data(), packed.data(), s.m, s.n, s.k, s.ta, 0.0f);
    }),
             fl, bf16_bytes, pbf16);
  }
  if (s.bf16_out) {  // as the bf16 step runs it: C rounded to bf16 as it is written
    std::snprintf(name, sizeof name, "  bf16 C: %s", s.what);
    r.report(name, r.time([&] {
      k.matmul_bf16_out(ctx, reinterpret_cast<uint16_t*>(cbuf.data()), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
    }),
             fl, bf16_c_bytes, pbf16);
  }
  uint16_t* const c_h = reinterpret_cast<uint16_t*>(cbuf.data());
  bench_activation_epilogues(r, s, fl, bf16_bytes);
  if (s.bf16_out && bf16 && !amx && r.onednn) {  // our GEMM takes these: oneDNN's beside it
    std::snprintf(name, sizeof name, "  oneDNN bf16 C: %s", s.what);
    r.report(name,
             r.time([&] { r.onednn->matmul_bf16_out(r.ctx, c_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb); }),
             fl, bf16_c_bytes, pbf16);
  }
  // As the bf16 step runs it: relu²(fc) read as it is packed (the down product's forward only
  // where the activation does not come out of the up product's epilogue).
  if (s.relu2 && k.matmul_bf16_relu2 && (s.ta || !k.matmul_bf16_out_relu2)) {
    std::snprintf(name, sizeof name, "  relu2(%s) read: %s", s.ta ? "B" : "A", s.what);
    r.report(name, r.time([&] {
      k.matmul_bf16_relu2(ctx, cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f, !s.ta);
    }),
             fl, bf16_bytes, pbf16);
  }
  if (s.relu2 && s.ta && k.matmul_bf16_gelu) {  // the same for GELU's weight gradient (--mlp gelu)
    std::snprintf(name, sizeof name, "  gelu(B) read: %s", s.what);
    r.report(name, r.time([&] {
      k.matmul_bf16_gelu(ctx, cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f, false);
    }),
             fl, bf16_bytes, pbf16);
  }
  if ((amx || bf16) && r.onednn) {  // our GEMMs take some of these products: oneDNN's beside them
    std::snprintf(name, sizeof name, "  oneDNN bf16 %s", s.what);
    r.report(name, r.time([&] {
      r.onednn->matmul_bf16(r.ctx, cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f);
    }),
             fl, bf16_bytes, pbf16);
  }
}

}  // namespace

void bench_matmuls(KernelRows& r) {
  const KernelTable& k = r.k;
  const ExecContext& ctx = r.ctx;
  const int64_t N = r.N, C = r.C, F = r.F, V = r.V, R = r.R;
  auto &a = r.a, &b = r.b, &cbuf = r.cbuf;
  auto &ah = r.ah, &bh = r.bh;
  // (The MLP's up product and the down projection's data gradient write bf16 C; the down
  // projection and its weight gradient read relu²(fc) as they pack it.)
  const Mm mms[] = {{"fc fwd", N, F, C, false, true, false, true},
                    {"proj fwd", N, C, F, false, true, false, false, true},
                    {"fc dgrad", N, C, F, false, false},
                    {"proj dgrad", N, F, C, false, false, false, true},
                    {"fc wgrad", F, C, N, true, false},
                    {"proj wgrad", C, F, N, true, false, false, false, true},
                    {"head fwd (chunk)", R, V, C, false, true, true},
                    {"head wgrad (chunk)", V, C, R, true, false},
                    {"head dgrad (chunk)", R, C, V, false, false, true}};
  for (const Mm& s : mms) {
    const double fl = 2.0 * double(s.m) * double(s.n) * double(s.k);
    // Compulsory bytes: A and B once, C written once (fp32 or bf16; two bf16 C-sized tensors
    // where the epilogue writes or reads the activation beside C).
    const double ab = double(s.m) * double(s.k) + double(s.k) * double(s.n), cn = double(s.m) * double(s.n);
    const double f32_bytes = 4 * (ab + cn), bf16_bytes = 2 * ab + 4 * cn, bf16_c_bytes = 2 * (ab + cn);
    char name[96];
    std::snprintf(name, sizeof name, "matmul fp32 %s %ldx%ldx%ld", s.what, long(s.m), long(s.n), long(s.k));
    r.report(name, r.time([&] { k.matmul(ctx, cbuf.data(), a.data(), b.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f); }), fl,
             f32_bytes, r.peaks.fma);
    std::snprintf(name, sizeof name, "matmul bf16 %s %ldx%ldx%ld", s.what, long(s.m), long(s.n), long(s.k));
    r.report(name,
             r.time([&] { k.matmul_bf16(ctx, cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f); }),
             fl, bf16_bytes, r.peaks.bf16_gflops);
    bench_matmul_variants(r, s, fl, bf16_bytes, bf16_c_bytes);
  }
}

void run_kernel_table(const BenchFlags& f, const Machine& m, const Peaks& peaks, nlohmann::json& out) {
  const auto cfg_names = split(f.configs);
  const std::string model = cfg_names.empty() ? "cpu" : cfg_names[0];
  const ModelConfig c = named_config(model);
  KernelRows r(m, c, sequences_per_step(f, c), peaks, f.quick);
  std::printf("kernels on %s shapes (N=%ld, C=%ld, F=%ld, V=%ld, T=%ld, H=%ld, D=%ld):\n", model.c_str(), long(r.N),
              long(r.C), long(r.F), long(r.V), long(r.T), long(r.H), long(r.D));
  std::printf("  %-34s %10s %12s %8s %8s\n", "kernel", "ms", "rate", "% roof", "FLOP/B");
  bench_matmuls(r);
  bench_attention(r);
  bench_elementwise(r);
  bench_optimizer_kernels(r);
  std::printf("\n");
  out["kernels"] = r.json;
  if (f.roofline.empty()) return;
  // The table's own rows; its indented variants (bf16 C, packed B, oneDNN's) would only crowd
  // the GEMMs' corner.
  std::vector<profile::KernelRate> rows;
  for (const auto& kr : r.rates)
    if (!kr.name.empty() && kr.name[0] != ' ') rows.push_back(kr);
  const std::string title = strf("nanotrain bench: roofline of the kernels on %s shapes", model.c_str());
  const std::string subtitle =
      strf("%s; %d threads, kernels %s; N=%ld C=%ld F=%ld V=%ld T=%ld H=%ld D=%ld; roofs measured in this run",
           m.features.c_str(), m.threads, m.kernels->name, long(r.N), long(r.C), long(r.F), long(r.V), long(r.T),
           long(r.H), long(r.D));
  const profile::Roofs roofs{peaks.fma, peaks.bf16_gflops, peaks.triad};
  write_file_atomic(f.roofline, profile::roofline_svg(roofs, rows, title, subtitle));
  std::printf("roofline chart: %s\n\n", f.roofline.c_str());
}

}  // namespace nt::cli::bench
