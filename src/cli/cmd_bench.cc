// SPDX-License-Identifier: MIT
// `nanotrain bench`: this machine's peaks (measured here), every hot kernel's rate against
// them on a model's shapes, and whole training steps (forward + backward + optimizer) with
// tokens/s and MFU. A table on stdout; --json writes the same figures as JSON.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/buffer.h"
#include "core/check.h"
#include "core/files.h"
#include "core/rng.h"
#include "core/system.h"
#include "kernels/backend.h"
#include "composed/newton_schulz_bf16.h"
#include "model/config.h"
#include "model/gpt.h"
#include "model/params.h"
#include "optim/optimizer.h"
#include "profile/profile.h"
#include "profile/roofline.h"

namespace nt::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds per call of fn over 5 timed batches, each at least 50 ms long, after a warm-up
// call; quick (--quick, a smoke run whose figures are rough): one timed call.
double time_calls(const std::function<void()>& fn, bool quick) {
  const int reps = quick ? 1 : 5;
  const double min_s = quick ? 0.0 : 0.05;
  fn();  // warm-up (primitive creation, page faults)
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    int calls = 0;
    const auto t0 = Clock::now();
    double dt = 0;
    do {
      fn();
      ++calls;
      dt = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (dt < min_s);
    t.push_back(dt / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void fill_rand(float* p, size_t n, uint64_t seed, float scale = 1.0f) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = scale * (float(s >> 40) / float(1 << 24) * 2.0f - 1.0f);
  }
}

struct BenchFlags {
  std::string configs = "cpu,d6";
  std::string dtypes = "fp32,bf16";
  int steps = 3;
  int batch = 0;  // 0: kStepTokens a step (sequences_per_step)
  int threads = 0;
  bool no_kernels = false, no_steps = false, profile = false, quick = false;
  std::string trace;
  std::string json;
  std::string roofline;
};

// Model shapes benchmarked: the `cpu` preset and the larger ones, vocab 8192.
ModelConfig named_config(const std::string& name) {
  ModelConfig c;
  c.vocab_size = 8192, c.seq_len = 256, c.head_dim = 64;
  if (name == "cpu") c.depth = 4, c.d_model = 256;
  else if (name == "d6") c.depth = 6, c.d_model = 384;
  else if (name == "d8") c.depth = 8, c.d_model = 512;
  else if (name == "frontier") c.depth = 8, c.d_model = 512, c.head_dim = 128, c.seq_len = 2048, c.vocab_size = 32768;
  else fail("--configs %s: unknown (cpu, d6, d8, frontier)", name.c_str());
  c.n_head = c.n_kv_head = c.d_model / c.head_dim;
  c.validate();
  return c;
}

// Tokens a step when --batch-size is left at 0: tools/compare_pytorch.sh's, so that a plain
// `bench` measures the step the PyTorch comparison times (32 sequences at T 256, 4 at frontier's
// T 2048). Fewer tokens give Newton-Schulz, whose cost does not scale with the batch, a larger
// share of the step (a depth-8 bf16 step: 55 % of the bf16 peak at 16 sequences, 67 % at 32).
constexpr int64_t kStepTokens = 8192;

int sequences_per_step(const BenchFlags& f, const ModelConfig& c) {
  return f.batch > 0 ? f.batch : int(std::max<int64_t>(1, kStepTokens / c.seq_len));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

// Where a file will be written (--json, --trace's prefix): its folder must exist, checked before
// minutes of measuring rather than after.
void check_folder_of(const char* flag, const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
    fail("%s %s: no folder %s to write into", flag, path.c_str(), parent.string().c_str());
}

// Every flag's error comes before any measuring.
void validate(const BenchFlags& f) {
  if (f.steps <= 0) fail("--steps %d: must be positive", f.steps);
  if (f.batch < 0) fail("--batch-size %d: must be positive (or 0: 8,192 tokens a step)", f.batch);
  if (f.threads < 0) fail("--threads %d: must be >= 0", f.threads);
  const auto configs = split(f.configs), dtypes = split(f.dtypes);
  if (configs.empty()) fail("--configs '%s': no model named (cpu, d6, d8, frontier)", f.configs.c_str());
  if (dtypes.empty() && !f.no_steps) fail("--dtype '%s': no dtype named (fp32, bf16)", f.dtypes.c_str());
  for (const auto& name : configs) named_config(name);
  for (const auto& d : dtypes) parse_precision(d.c_str());
  if (!f.json.empty() && f.json != "-") check_folder_of("--json", f.json);
  if (!f.trace.empty()) check_folder_of("--trace", f.trace);
  if (!f.roofline.empty()) {
    if (f.no_kernels) fail("--roofline %s: the chart needs the kernel table (drop --no-kernels)", f.roofline.c_str());
    check_folder_of("--roofline", f.roofline);
  }
}

void run_bench(const BenchFlags& f) {
  const int threads = setup_threads(f.threads);
  const CpuFeatures cf = cpu_features();
  const bool avx512 = cf.avx512f && cf.avx512bw, bf16 = avx512 && cf.avx512bf16, amx = bf16 && cf.amx_bf16;
  const Backend& be = backend_for_device("cpu");
  const KernelTable& k = be.kernels();
  // oneDNN's bf16 GEMMs, timed beside ours where ours take the product.
  const std::vector<Backend::AltGemm> alts = be.alternative_gemms ? be.alternative_gemms() : std::vector<Backend::AltGemm>{};
  const Backend::AltGemm* onednn = alts.empty() ? nullptr : &alts.front();
  nlohmann::json out;
  out["machine"] = {{"host", hostname()}, {"threads", threads}, {"features", cf.describe()}, {"kernels", k.name}};

  // Peaks.
  auto time_median = [&f](const std::function<void()>& fn) { return time_calls(fn, f.quick); };
  // Other processes can only lower a measured peak: keep the best of several short tries.
  double fma = 0, pbf16 = 0, triad = 0, amx_loaded = 0;
  // The compute peaks are measured again after each model's steps (see below), so a busy moment
  // here cannot make a later MFU look better than it is.
  auto measure_compute_peaks = [&] {
    fma = std::max(fma, be.measure_peak(Precision::kFp32, 0.15, 1).gflops);
    // With AMX the tiles are the bf16 peak (the bf16 GEMMs and the attention run on them).
    pbf16 = bf16 ? std::max(pbf16, be.measure_peak(Precision::kBf16, 0.15, 1).gflops) : fma;
  };
  for (int i = 0; i < (f.quick ? 1 : 3); ++i) {
    if (amx && be.measure_tiles_loaded_gflops)
      amx_loaded = std::max(amx_loaded, be.measure_tiles_loaded_gflops(0.15));
    measure_compute_peaks();
    triad = std::max(triad, be.measure_bandwidth_gbs(int64_t(1) << 25, 3));
  }
  const char* bf16_isa = amx ? "amx-bf16" : bf16 ? "avx512bf16" : "none (fp32)";
  out["peaks"] = {{"fp32_fma_gflops", fma}, {"bf16_gflops", pbf16}, {"triad_gbs", triad},
                  {"fp32_isa", avx512 ? "avx512" : "avx2"}, {"bf16_isa", bf16_isa}};
  // MFU stays against the tiles' own rate; the loaded rate says how much of it a GEMM can reach.
  if (amx) out["peaks"]["bf16_amx_loaded_gflops"] = amx_loaded;
  double load = 0;
  if (FILE* lf = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(lf, "%lf", &load) != 1) load = 0;
    std::fclose(lf);
  }
  out["machine"]["loadavg_1min"] = load;
  std::printf("nanotrain bench: %d threads, kernels %s, load average %.2f%s\n", threads, k.name, load,
              load > threads + 0.5 ? " (BUSY: other processes share the cores; rates are depressed)" : "");
  std::printf("peaks (measured now): fp32 FMA %.0f GFLOP/s (%s), bf16 %.0f GFLOP/s (%s), triad %.1f GB/s\n", fma,
              avx512 ? "avx512" : "avx2", pbf16, bf16_isa, triad);
  if (amx)
    std::printf("  AMX with a GEMM's operand tiles loaded every step (from L1): %.0f GFLOP/s, %.0f %% of the tiles' "
                "peak: no bf16 GEMM here runs faster\n",
                amx_loaded, 100.0 * amx_loaded / pbf16);
  std::printf("\n");

  const auto cfg_names = split(f.configs);
  if (!f.no_kernels) {
    const ModelConfig c = named_config(cfg_names.empty() ? "cpu" : cfg_names[0]);
    const int64_t B = sequences_per_step(f, c), N = B * c.seq_len, C = c.d_model, F = c.mlp_dim(),
                  V = c.vocab_size, H = c.n_head, D = c.head_dim, T = c.seq_len, R = std::min(N, head_chunk_rows(V));
    std::printf("kernels on %s shapes (N=%ld, C=%ld, F=%ld, V=%ld, T=%ld, H=%ld, D=%ld):\n",
                cfg_names.empty() ? "cpu" : cfg_names[0].c_str(), long(N), long(C), long(F), long(V), long(T),
                long(H), long(D));
    std::printf("  %-34s %10s %12s %8s %8s\n", "kernel", "ms", "rate", "% roof", "FLOP/B");
    const size_t big = size_t(std::max({N * F, R * V, F * C, V * C}));
    Buffer<float> a{big}, b{big}, cbuf{big}, d{big}, e{big}, g{big};
    fill_rand(a.data(), big, 1), fill_rand(b.data(), big, 2), fill_rand(cbuf.data(), big, 3);
    fill_rand(d.data(), big, 4), fill_rand(e.data(), big, 5);
    Buffer<uint16_t> ah{big}, bh{big};
    k.to_bf16(ah.data(), a.data(), int64_t(big));
    k.to_bf16(bh.data(), b.data(), int64_t(big));
    nlohmann::json kj = nlohmann::json::array();
    // Each row: one call's FLOPs and compulsory bytes (operands read once, results written once),
    // and its rate against the roof that bounds it at that intensity (profile/roofline.h): GF/s
    // against its compute peak, or GB/s against the bandwidth. The rows go to --roofline's chart.
    const profile::Roofs roofs{fma, pbf16, triad};
    std::vector<profile::KernelRate> rates;
    auto report = [&](const std::string& name, double sec, double flops, double bytes, double peak) {
      const profile::KernelRate kr{name, sec, flops, bytes, peak, peak != fma};
      const profile::RoofPlacement p = profile::place(roofs, kr);
      const bool per_flop = !p.memory_bound;
      char intensity[16] = "-";
      if (flops > 0) std::snprintf(intensity, sizeof intensity, "%.3g", p.intensity);
      std::printf("  %-34s %10.3f %7.1f %-4s %7.1f%% %8s\n", name.c_str(), sec * 1e3, per_flop ? p.gflops : p.gbs,
                  per_flop ? "GF/s" : "GB/s", p.pct_roof, intensity);
      nlohmann::json j = {{"kernel", name},           {"ms", sec * 1e3},
                          {"gflop", flops * 1e-9},    {"gbyte", bytes * 1e-9},
                          {"gbs", p.gbs},             {"bound", p.memory_bound ? "memory" : "compute"},
                          {"peak_gflops", peak},      {"pct_roof", p.pct_roof}};
      if (flops > 0) j["gflops"] = p.gflops, j["flop_per_byte"] = p.intensity, j["roof_gflops"] = p.roof_gflops;
      kj.push_back(j);
      rates.push_back(kr);
    };
    struct Mm {
      const char* what;
      int64_t m, n, k;
      bool ta, tb;
      bool head_b = false;    // B is the head's weights: the model packs it once for every chunk
      bool bf16_out = false;  // the bf16 step writes C in bf16 (matmul_bf16_out)
      bool relu2 = false;     // the bf16 step reads relu²(fc) through the product (matmul_bf16_relu2)
    };
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
      report(name, time_median([&] { k.matmul(cbuf.data(), a.data(), b.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f); }),
             fl, f32_bytes, fma);
      std::snprintf(name, sizeof name, "matmul bf16 %s %ldx%ldx%ld", s.what, long(s.m), long(s.n), long(s.k));
      report(name,
             time_median([&] { k.matmul_bf16(cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f); }),
             fl, bf16_bytes, pbf16);
      if (s.head_b && k.matmul_bf16_packed_b) {  // the product alone, B packed beforehand
        Buffer<uint16_t> packed(size_t(k.packed_b_bf16_size(s.n, s.k)));
        k.pack_b_bf16(packed.data(), bh.data(), s.n, s.k, s.tb);
        std::snprintf(name, sizeof name, "  B packed once: %s", s.what);
        report(name, time_median([&] {
                 k.matmul_bf16_packed_b(cbuf.data(), ah.data(), packed.data(), s.m, s.n, s.k, s.ta, 0.0f);
               }),
               fl, bf16_bytes, pbf16);
      }
      if (s.bf16_out) {  // as the bf16 step runs it: C rounded to bf16 as it is written
        std::snprintf(name, sizeof name, "  bf16 C: %s", s.what);
        report(name, time_median([&] {
                 k.matmul_bf16_out(reinterpret_cast<uint16_t*>(cbuf.data()), ah.data(), bh.data(), s.m, s.n, s.k, s.ta,
                                   s.tb);
               }),
               fl, bf16_c_bytes, pbf16);
      }
      uint16_t* const c_h = reinterpret_cast<uint16_t*>(cbuf.data());
      uint16_t* const act_h = c_h + s.m * s.n;  // (cbuf holds m n floats: room for two bf16 C)
      if (s.bf16_out && s.tb && k.matmul_bf16_out_relu2) {  // the up product writing relu²(fc) too
        std::snprintf(name, sizeof name, "  bf16 C + relu2: %s", s.what);
        report(name, time_median([&] {
                 k.matmul_bf16_out_relu2(c_h, act_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
               }),
               fl, bf16_bytes, pbf16);
      }
      if (s.bf16_out && !s.tb && k.matmul_bf16_out_relu2_bwd) {  // relu²'s gradient out of the product
        std::snprintf(name, sizeof name, "  bf16 C + relu2 bwd: %s", s.what);
        report(name, time_median([&] {
                 k.matmul_bf16_out_relu2_bwd(c_h, act_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
               }),
               fl, bf16_bytes, pbf16);
      }
      if (s.bf16_out && bf16 && !amx && onednn) {  // our GEMM takes these (gemm_rows_bf16_avx512): oneDNN's beside it
        std::snprintf(name, sizeof name, "  oneDNN bf16 C: %s", s.what);
        report(name, time_median([&] {
                 onednn->matmul_bf16_out(c_h, ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb);
               }),
               fl, bf16_c_bytes, pbf16);
      }
      // As the bf16 step runs it: relu²(fc) read as it is packed (the down product's forward only
      // where the activation does not come out of the up product's epilogue).
      if (s.relu2 && k.matmul_bf16_relu2 && (s.ta || !k.matmul_bf16_out_relu2)) {
        std::snprintf(name, sizeof name, "  relu2(%s) read: %s", s.ta ? "B" : "A", s.what);
        report(name, time_median([&] {
                 k.matmul_bf16_relu2(cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f, !s.ta);
               }),
               fl, bf16_bytes, pbf16);
      }
      // Our GEMMs take some of these products (AMX: matmul_tiles.cc; AVX-512-BF16, beta 0 or 1:
      // gemm_rows_avx512.cc, and gemm_at_avx512.cc for A^T B): oneDNN's beside them.
      if ((amx || bf16) && onednn) {
        std::snprintf(name, sizeof name, "  oneDNN bf16 %s", s.what);
        report(name, time_median([&] {
                 onednn->matmul_bf16(cbuf.data(), ah.data(), bh.data(), s.m, s.n, s.k, s.ta, s.tb, 0.0f);
               }),
               fl, bf16_bytes, pbf16);
      }
    }
    // Attention: causal QK^T and PV (2 GEMMs of T*T/2*D per head); backward recomputes S and
    // does 4 more: 5 GEMMs.
    {
      const double fwd_fl = 2.0 * 2.0 * double(B) * H * (double(T) * (T + 1) / 2) * D;
      // fp32 q, k, v in, O and the log-sum-exp out; backward: q, k, v, O, dO and the log-sum-exp
      // in, dq, dk, dv out.
      const double qkvo = 4.0 * double(N) * H * D, lse_bytes = 4.0 * double(B) * H * T;
      const double fwd_bytes = 4 * qkvo + lse_bytes, bwd_bytes = 8 * qkvo + lse_bytes;
      Buffer<float> lse{size_t(B * H * T)};
      fill_rand(a.data(), size_t(N * H * D), 7, 1.0f);
      report("attention fwd", time_median([&] {
               k.attention_fwd(d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D);
             }), fwd_fl, fwd_bytes, fma);
      k.attention_fwd(d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D);
      Buffer<float> dq{size_t(N * H * D)}, dk{size_t(N * H * D)}, dv{size_t(N * H * D)};
      report("attention bwd", time_median([&] {
               k.attention_bwd(dq.data(), dk.data(), dv.data(), e.data(), a.data(), b.data(), cbuf.data(), d.data(),
                               lse.data(), B, T, H, H, D);
             }), 2.5 * fwd_fl, bwd_bytes, fma);
      report("attention fwd bf16", time_median([&] {
               k.attention_fwd_bf16(d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D);
             }), fwd_fl, fwd_bytes, pbf16);
      k.attention_fwd_bf16(d.data(), lse.data(), a.data(), b.data(), cbuf.data(), B, T, H, H, D);
      report("attention bwd bf16", time_median([&] {
               k.attention_bwd_bf16(dq.data(), dk.data(), dv.data(), e.data(), a.data(), b.data(), cbuf.data(),
                                    d.data(), lse.data(), B, T, H, H, D);
             }), 2.5 * fwd_fl, bwd_bytes, pbf16);
    }
    // The elementwise kernels' FLOPs: their formulas' arithmetic per element (ops_ref.h; an FMA
    // counts 2), enough to place them on the roofline, far below its ridge (per-row terms left out).
    Buffer<float> rstd{size_t(N)};
    report("rmsnorm fwd (N,C)", time_median([&] { k.rmsnorm_fwd(d.data(), rstd.data(), a.data(), N, C, 1e-6f); }),
           3.0 * N * C, 8.0 * N * C, fma);
    report("rmsnorm bwd (N,C)", time_median([&] {
             k.rmsnorm_bwd(e.data(), b.data(), d.data(), rstd.data(), N, C, true);
           }), 6.0 * N * C, 16.0 * N * C, fma);
    report("relu2 fwd (N,F)", time_median([&] { k.relu2_fwd(d.data(), a.data(), N * F); }), 2.0 * N * F, 8.0 * N * F,
           fma);
    report("relu2 fwd bf16 (N,F)", time_median([&] { k.relu2_fwd_bf16(bh.data(), ah.data(), N * F); }),
           2.0 * N * F, 4.0 * N * F, fma);
    report("to_bf16 (N,F)", time_median([&] { k.to_bf16(ah.data(), a.data(), N * F); }), 0.0, 6.0 * N * F, fma);
    report("relu2 bwd (N,F)", time_median([&] { k.relu2_bwd(d.data(), b.data(), a.data(), N * F); }),
           3.0 * N * F, 12.0 * N * F, fma);
    Buffer<uint16_t> ch{big};
    report("relu2 bwd bf16 (N,F)", time_median([&] { k.relu2_bwd_bf16(ch.data(), bh.data(), ah.data(), N * F); }),
           3.0 * N * F, 6.0 * N * F, fma);
    // As the bf16 step runs them: the forward keeps only the bf16 copy, the backward reads it.
    report("rmsnorm fwd bf16 (N,C)", time_median([&] {
             k.rmsnorm_fwd_bf16(nullptr, ch.data(), rstd.data(), a.data(), N, C, 1e-6f);
           }), 3.0 * N * C, 6.0 * N * C, fma);
    report("rmsnorm bwd bf16 (N,C)", time_median([&] {
             k.rmsnorm_bwd_bf16(e.data(), ch.data(), b.data(), ah.data(), rstd.data(), N, C, true);
           }), 6.0 * N * C, 16.0 * N * C, fma);
    {
      // The q, k, v gradients side by side as one bf16 operand (the three conversions of a step).
      const int64_t HD = H * D, KD = c.n_kv_head * D, Q = HD + 2 * KD;
      report("to_bf16_rows (N,H*D+2*KVH*D)", time_median([&] {
               k.to_bf16_rows(ch.data(), Q, a.data(), N, HD);
               k.to_bf16_rows(ch.data() + HD, Q, b.data(), N, KD);
               k.to_bf16_rows(ch.data() + HD + KD, Q, cbuf.data(), N, KD);
             }), 0.0, 6.0 * N * Q, fma);
      // Rotary + QK-norm on q, in place (its output stays normalised call after call), and the
      // backward from that output.
      Buffer<float> cs{size_t(T * D / 2)}, sn{size_t(T * D / 2)}, rq{size_t(N * H)};
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < D / 2; ++j) {
          const double angle = double(t) * std::pow(10000.0, -2.0 * double(j) / double(D));
          cs[size_t(t * (D / 2) + j)] = float(std::cos(angle)), sn[size_t(t * (D / 2) + j)] = float(std::sin(angle));
        }
      report("rotary + qk-norm fwd (N,H*D)", time_median([&] {
               k.rope_norm_fwd(d.data(), rq.data(), cs.data(), sn.data(), B, T, H, D, 1e-6f);
             }), 6.0 * N * HD, 8.0 * N * HD, fma);
      report("rotary + qk-norm bwd (N,H*D)", time_median([&] {
               k.rope_norm_bwd(e.data(), d.data(), rq.data(), cs.data(), sn.data(), B, T, H, D);
             }), 8.0 * N * HD, 12.0 * N * HD, fma);
    }
    {
      std::vector<int32_t> ids(static_cast<size_t>(N));
      for (int64_t i = 0; i < N; ++i) ids[size_t(i)] = int32_t((i * 7919) % V);
      report("embedding fwd (N,C)", time_median([&] { k.embed_fwd(d.data(), ids.data(), a.data(), N, C); }),
             0.0, 8.0 * N * C, fma);
      report("embedding bwd (N,C)", time_median([&] { k.embed_bwd(g.data(), e.data(), ids.data(), N, C); }),
             1.0 * N * C, 12.0 * N * C, fma);
    }
    {
      // A head chunk's logits (R rows): the fp32 loss writes its gradient over them, the bf16 one
      // into a bf16 operand. Each call after the first reads the previous call's output: the
      // same work (no value is special), with no copy inside the timing.
      std::vector<int32_t> tg(static_cast<size_t>(R));
      for (int64_t i = 0; i < R; ++i) tg[size_t(i)] = int32_t((i * 7919) % V);
      char name[64];
      // FLOPs as the AVX-512 code computes them, about 60 a logit: the tanh and the exp as their
      // polynomials (25-30 each), the rest a handful; far more than the 6-8 bytes a logit moves.
      constexpr double kXentFlops = 60;
      std::snprintf(name, sizeof name, "softcap xent + grad (%ld,V)", long(R));
      std::copy_n(b.data(), R * V, cbuf.data());
      report(name, time_median([&] { k.softcap_xent(cbuf.data(), rstd.data(), tg.data(), R, V, 15.0f, 1.0f); }),
             kXentFlops * R * V, 8.0 * R * V, fma);
      std::snprintf(name, sizeof name, "softcap xent + bf16 grad (%ld,V)", long(R));
      std::copy_n(b.data(), R * V, cbuf.data());
      report(name, time_median([&] {
               k.softcap_xent_bf16(cbuf.data(), rstd.data(), tg.data(), R, V, 15.0f, 1.0f, ch.data());
             }), kXentFlops * R * V, 6.0 * R * V, fma);
    }
    {
      // Muon on the MLP matrix (C x F after the transpose to rows <= cols), 5 iterations.
      const int64_t m = C, n = F;
      Buffer<float> x{size_t(m * n)}, y{size_t(m * n)}, ga{size_t(m * m)}, gb{size_t(m * m)}, x0{size_t(m * n)};
      fill_rand(x0.data(), size_t(m * n), 11);  // each timed call starts from a copy (the iteration works in place)
      // FLOPs counted as run: every symmetric product (X X^T, A A; G0, G G, P G, P (P G), P Q)
      // as its triangle, the products with the iterate (P X; the Gram iteration's final Q X0)
      // whole. Both versions iterate the MLP matrix on the Gram matrix (F = 4 C; the bf16 one
      // plainly where bf16 GEMMs run on matrix tiles). The Gram iteration's chain (G G, P G,
      // P (P G)) is fp32 in both, so the bf16 row's peak is the one of its mix: its FLOPs over
      // the time they take at the bf16 and fp32 peaks.
      const int steps = 5;
      const double mc = double(m), nc = double(n), s = steps;
      const double chain = mc * mc * mc * (s + 2 * (s - 1));  // fp32 in both versions
      const double ends = 3 * mc * mc * nc + mc * mc * mc * (s - 1);  // G0, Q X0, the P Q chain
      const double plain = s * (3 * mc * mc * nc + mc * mc * mc);
      report("muon newton-schulz x5 (C,F)", time_median([&] {
               std::copy_n(x0.data(), m * n, x.data());
               newton_schulz(k, x.data(), y.data(), ga.data(), gb.data(), m, n, steps);
             }), newton_schulz_on_gram(m, n) ? ends + chain : plain, 8 * mc * nc, fma);
      NewtonSchulzBf16 ns;
      const bool gram = newton_schulz_bf16_on_gram(k, m, n);
      const double mixed_peak = gram ? (ends + chain) / (ends / pbf16 + chain / fma) : pbf16;
      report("muon newton-schulz x5 bf16 (C,F)", time_median([&] {
               std::copy_n(x0.data(), m * n, x.data());
               ns.run(k, x.data(), ga.data(), gb.data(), m, n, steps);
             }), gram ? ends + chain : plain, 8 * mc * nc, mixed_peak);
      // The attention's square matrices (C x C), iterated plainly (the backend's one op where it
      // has one).
      report("muon newton-schulz x5 bf16 (C,C)", time_median([&] {
               std::copy_n(x0.data(), m * m, x.data());
               ns.run(k, x.data(), ga.data(), gb.data(), m, m, steps);
             }), s * 4 * mc * mc * mc, 8 * mc * mc, pbf16);
    }
    report("muon momentum (F*C)", time_median([&] { k.nesterov(d.data(), e.data(), a.data(), F * C, 0.95f); }),
           6.0 * F * C, 16.0 * F * C, fma);
    report("transpose (F,C)", time_median([&] { k.transpose(d.data(), a.data(), F, C); }), 0.0, 8.0 * F * C, fma);
    report("axpby (F*C)", time_median([&] { k.axpby(d.data(), a.data(), F * C, 0.5f, 0.5f); }), 3.0 * F * C,
           12.0 * F * C, fma);
    report("sum of squares (F*C)", time_median([&] { (void)k.sum_squares(a.data(), F * C); }), 2.0 * F * C,
           4.0 * F * C, fma);
    report("adamw (V*C)", time_median([&] {
             k.adamw_step(d.data(), a.data(), e.data(), g.data(), V * C, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 0.5f, 0.5f);
           }), 15.0 * V * C, 28.0 * V * C, fma);
    std::printf("\n");
    out["kernels"] = kj;
    if (!f.roofline.empty()) {
      // The table's own rows; its indented variants (bf16 C, packed B, oneDNN's) would only crowd
      // the GEMMs' corner.
      std::vector<profile::KernelRate> rows;
      for (const auto& r : rates)
        if (!r.name.empty() && r.name[0] != ' ') rows.push_back(r);
      const std::string title = strf("nanotrain bench: roofline of the kernels on %s shapes",
                                     cfg_names.empty() ? "cpu" : cfg_names[0].c_str());
      const std::string subtitle =
          strf("%s; %d threads, kernels %s; N=%ld C=%ld F=%ld V=%ld T=%ld H=%ld D=%ld; roofs measured in this run",
               cf.describe().c_str(), threads, k.name, long(N), long(C), long(F), long(V), long(T), long(H), long(D));
      write_file_atomic(f.roofline, profile::roofline_svg(roofs, rows, title, subtitle));
      std::printf("roofline chart: %s\n\n", f.roofline.c_str());
    }
  }

  if (!f.no_steps) {
    nlohmann::json sj = nlohmann::json::array();
    if (f.batch > 0)
      std::printf("training steps (forward + backward + optimizer, %d x T sequences, random tokens):\n", f.batch);
    else
      std::printf("training steps (forward + backward + optimizer, %ld tokens: %ld / T sequences, random tokens):\n",
                  long(kStepTokens), long(kStepTokens));
    std::printf("  %-9s %-5s %10s %12s %8s %16s\n", "model", "dtype", "step ms", "tokens/s", "MFU", "peak used");
    for (const auto& name : cfg_names) {
      const ModelConfig c = named_config(name);
      for (const auto& dts : split(f.dtypes)) {
        const Precision prec = parse_precision(dts.c_str());
        const int B = sequences_per_step(f, c), T = c.seq_len;
        Gpt model(c, k, B, T, prec);
        init_params(model.params(), 1);
        OptimConfig oc;
        oc.resolve(c.d_model);
        oc.bf16_newton_schulz = prec == Precision::kBf16;  // as `train` runs it
        Optimizer opt(oc, model.params(), k);
        std::vector<int32_t> x(size_t(B) * T), y(size_t(B) * T);
        for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t((i * 2654435761u) % uint32_t(c.vocab_size));
        for (size_t i = 0; i < y.size(); ++i) y[i] = x[(i + 1) % x.size()];
        auto step = [&] {
          profile::Zone zs(profile::kStep);
          model.forward_backward(x.data(), y.data(), B, T, 1.0, false);  // overwrites the gradients
          profile::Zone z(profile::kOptimizer);
          opt.step(model.params(), model.grads(), 1.0);
        };
        step();  // warm-up
        if (f.profile || !f.trace.empty()) {
          profile::reset();
          profile::enable(true);
        }
        std::vector<double> t;
        for (int s = 0; s < f.steps; ++s) {
          const auto t0 = Clock::now();
          step();
          t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        }
        std::sort(t.begin(), t.end());
        const double sec = t[t.size() / 2], tps = double(B) * T / sec;
        // Once more right after the steps: MFU is against the best peak seen in this run so far.
        measure_compute_peaks();
        const double peak = prec == Precision::kBf16 ? pbf16 : fma;
        const double mfu = tps * flops_per_token(c, T) / (peak * 1e9);
        if (profile::enabled()) {
          profile::enable(false);
          char label[96];
          std::snprintf(label, sizeof label, "the best %s peak measured in this run, %.0f GFLOP/s",
                        precision_name(prec), peak);
          std::printf("%s", profile::report(flops_per_token(c, T) * B * T, peak, label).c_str());
          if (!f.trace.empty()) {
            const std::string path = f.trace + "." + name + "." + precision_name(prec);
            profile::write_trace(path + ".json");
            const std::string title =
                strf("nanotrain bench: where a %s %s step's time goes", name.c_str(), precision_name(prec));
            const std::string subtitle = strf("batch %d x T %d, median %.1f ms a step, MFU %.1f %% of %.0f GFLOP/s", B,
                                              T, sec * 1e3, 100.0 * mfu, peak);
            write_file_atomic(path + ".svg", profile::chart_svg(title, subtitle));
            std::printf("  trace: %s.json, chart: %s.svg\n", path.c_str(), path.c_str());
          }
        }
        std::printf("  %-9s %-5s %10.1f %12.0f %7.1f%% %9.0f GF/s %s\n", name.c_str(), precision_name(prec), sec * 1e3,
                    tps, 100 * mfu, peak, prec == Precision::kBf16 ? "bf16" : "fp32");
        sj.push_back({{"model", name}, {"config", c.to_json()}, {"dtype", precision_name(prec)}, {"batch", B},
                      {"step_ms", sec * 1e3}, {"tokens_per_second", tps}, {"mfu", mfu}, {"peak_gflops", peak},
                      {"flops_per_token", flops_per_token(c, T)}, {"steps", f.steps}});
        std::fflush(stdout);
      }
    }
    out["steps"] = sj;
    // The table's MFUs used the best peaks seen so far; these are the best of the whole run.
    out["peaks"]["fp32_fma_gflops"] = fma;
    out["peaks"]["bf16_gflops"] = pbf16;
  }
  if (!f.json.empty()) {
    const std::string s = out.dump(2) + "\n";
    if (f.json == "-") {
      std::fputs(s.c_str(), stdout);
    } else {
      write_file_atomic(f.json, s);
    }
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  auto* c = app.add_subcommand("bench", "Measure peaks, kernels and whole training steps (tokens/s, MFU)");
  c->add_option("--configs", f->configs, "Models for the step benchmark: cpu, d6, d8, frontier (comma list)")
      ->capture_default_str();
  c->add_option("--dtype", f->dtypes, "fp32, bf16 or both (comma list)")->capture_default_str();
  c->add_option("--steps", f->steps, "Timed steps per model (median)")->capture_default_str();
  c->add_option("--batch-size", f->batch,
                "Sequences per step (0 = 8,192 tokens a step, as tools/compare_pytorch.sh runs: 32 at T 256, "
                "4 at frontier's T 2048)")
      ->capture_default_str();
  c->add_option("--threads", f->threads, "OpenMP threads (0 = all cores)")->capture_default_str();
  c->add_flag("--no-kernels", f->no_kernels, "Skip the per-kernel table");
  c->add_flag("--no-steps", f->no_steps, "Skip the training-step table");
  c->add_flag("--profile", f->profile, "Print where each model's timed steps spend their time");
  c->add_flag("--quick", f->quick,
              "Time each kernel and each peak once: a quick check that everything runs (rough figures)");
  c->add_option("--trace", f->trace,
                "Write a Chrome trace (JSON) and the profile's chart (SVG) per model to "
                "PREFIX.<model>.<dtype>.json/.svg");
  c->add_option("--json", f->json, "Also write the figures as JSON to this file ('-' = stdout)");
  c->add_option("--roofline", f->roofline,
                "Also draw the kernels against this machine's roofs (compute peaks, bandwidth) as an SVG chart");
  c->callback([f] {
    validate(*f);
    run_bench(*f);
  });
}

}  // namespace nt::cli
