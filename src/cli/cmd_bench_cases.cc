// SPDX-License-Identifier: MIT
// `nanotrain bench --kernel-cases`: the kernel tests' cases (kernels/kernel_cases.h: the shapes,
// transposes, betas and windows every table is checked on) timed on every kernel table this
// machine runs, one row per (table, op, case), named as the tests name the case. GEMMs and
// attention are rated in GFLOP/s; the row kernels, which move far more bytes than they compute
// on, in GB/s of compulsory traffic (operands read once, results written once).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/bench.h"
#include "core/check.h"
#include "core/system.h"
#include "kernels/kernel_cases.h"

namespace nt::cli::bench {

namespace {

using Clock = std::chrono::steady_clock;

// An op of a case family: whether the table declares its dtype (caps) and fills its entry.
struct Op {
  const char* family;  // the case table it walks: matmul, attention_bf16, rows, ...
  const char* name;    // the KernelTable entry
  bool bf16;           // a bf16 op (caps.bf16), else an fp32 one (caps.fp32)
  bool present;        // the entry is not null
};

// A case as the tests name it (MatmulCase::name(), ...), and the GEMMs' beta.
struct CaseName {
  CaseName(std::string n, std::optional<double> b = {}) : name(std::move(n)), beta(b) {}
  std::string name;
  std::optional<double> beta;
};

// Why the table cannot run op (empty: it can).
std::string why_skipped(const KernelTable& t, const Op& op) {
  if (op.bf16 && !t.caps.bf16) return "the table declares no bf16 ops";
  if (!op.bf16 && !t.caps.fp32) return "the table declares no fp32 ops";
  if (!op.present) return std::string("the table has no ") + op.name;
  return "";
}

// The rows of one table: prints each and collects its JSON.
class CaseRows {
 public:
  // dry: count the rows the filter keeps, running nothing.
  CaseRows(const BenchFlags& f, const KernelTable& t, bool dry = false)
      : k(t), ctx(job_threads()), one_thread(1), reps_(f.quick ? 1 : kReps), min_s_(f.quick ? 0.0 : kMinBatchSeconds),
        filter_(f.case_filter), dry_(dry) {}

  // Times fn (one call of op on the case) unless the filter leaves it out or the table cannot
  // run it (a skipped row then says why). flops 0: a memory-bound op, rated by bytes.
  void row(const Op& op, const CaseName& cs, double flops, double bytes, const std::function<void()>& fn);
  // Whether row(op, cs, ...) would call the op; whether the table can run it at all.
  bool runs(const Op& op, const CaseName& cs) const { return !dry_ && kept_by_filter(op, label(cs)) && can_run(op); }
  bool can_run(const Op& op) const { return why_skipped(k, op).empty(); }
  int kept() const { return kept_; }

  static constexpr int kReps = 5;
  // Each timed repetition calls the op until this long has passed, so that the clock's
  // resolution does not decide the smallest cases' times.
  static constexpr double kMinBatchSeconds = 0.001;

  const KernelTable& k;
  // The ops' contexts: the job's threads, and one thread for the cases the tests run on one.
  ExecContext ctx, one_thread;
  nlohmann::json rows = nlohmann::json::array();

 private:
  int reps_;
  double min_s_;
  std::string filter_;
  bool dry_;
  int kept_ = 0;

  bool kept_by_filter(const Op& op, const std::string& label) const {
    return filter_.empty() || (std::string(op.family) + " " + op.name + " " + label).find(filter_) != std::string::npos;
  }
  static std::string label(const CaseName& cs) { return cs.name + (cs.beta ? strf(" beta %g", *cs.beta) : ""); }
};

void CaseRows::row(const Op& op, const CaseName& cs, double flops, double bytes, const std::function<void()>& fn) {
  const std::string text = label(cs);
  if (!kept_by_filter(op, text)) return;
  ++kept_;
  if (dry_) return;
  nlohmann::json j = {{"table", k.name}, {"family", op.family}, {"op", op.name}, {"case", cs.name}};
  if (cs.beta) j["beta"] = *cs.beta;
  const std::string why = why_skipped(k, op);
  if (!why.empty()) {
    std::printf("  %-16s %-19s %-34s skipped: %s\n", op.family, op.name, text.c_str(), why.c_str());
    j["skipped"] = why;
    rows.push_back(j);
    return;
  }
  const double sec = time_calls(fn, reps_, min_s_);
  const bool per_flop = flops > 0;
  const double rate = (per_flop ? flops : bytes) / sec * 1e-9;
  std::printf("  %-16s %-19s %-34s %11.2f %9.2f %s\n", op.family, op.name, text.c_str(), sec * 1e6, rate,
              per_flop ? "GF/s" : "GB/s");
  j["ms"] = sec * 1e3, j["gflop"] = flops * 1e-9, j["gbyte"] = bytes * 1e-9;
  j[per_flop ? "gflops" : "gbs"] = rate;
  rows.push_back(j);
}

// n zeros (at least one, so that data() is never null); random values in [-scale, scale]; bf16
// copies by truncation (the rounding does not change a kernel's speed).
template <class T = float>
std::vector<T> zeros(int64_t n) {
  return std::vector<T>(static_cast<size_t>(std::max<int64_t>(n, 1)));
}
std::vector<float> randoms(int64_t n, uint64_t seed, float scale = 1.0f) {
  std::vector<float> v = zeros(n);
  fill_rand(v.data(), v.size(), seed, scale);
  return v;
}
std::vector<uint16_t> bf16_randoms(int64_t n, uint64_t seed) {
  const std::vector<float> f = randoms(n, seed);
  std::vector<uint16_t> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &f[i], sizeof bits);
    h[i] = uint16_t(bits >> 16);
  }
  return h;
}

// A GEMM case's products: 2 m n k FLOPs; bytes: A and B read, C written, in the operands' types.
double gemm_flops(const cases::MatmulCase& c) { return 2.0 * double(c.m) * double(c.n) * double(c.k); }
double gemm_bytes(const cases::MatmulCase& c, double ab_size, double c_size) {
  return ab_size * double(c.m * c.k + c.k * c.n) + c_size * double(c.m * c.n);
}

// matmul (every beta the tests check), on the case's thread count; gram: B is A.
void time_matmul_fp32(CaseRows& r) {
  const KernelTable& k = r.k;
  const Op op{"matmul", "matmul", false, k.matmul != nullptr};
  for (const cases::MatmulCase& c : cases::matmul_cases()) {
    const std::vector<float> a = randoms(c.m * c.k, 1), b = c.gram ? a : randoms(c.k * c.n, 2);
    std::vector<float> out = randoms(c.m * c.n, 3);
    NT_CHECK(c.threads == 0 || c.threads == 1, "a matmul case on %d threads", c.threads);
    const ExecContext& cx = c.threads == 1 ? r.one_thread : r.ctx;
    for (double beta : c.betas)
      r.row(op, {c.name(), beta}, gemm_flops(c), gemm_bytes(c, 4, 4),
            [&] { k.matmul(cx, out.data(), a.data(), b.data(), c.m, c.n, c.k, c.ta, c.tb, float(beta)); });
  }
}

// matmul_bf16 (fp32 C, each beta) and matmul_bf16_out (bf16 C).
void time_matmul_bf16(CaseRows& r) {
  const KernelTable& k = r.k;
  const Op op{"matmul_bf16", "matmul_bf16", true, k.matmul_bf16 != nullptr};
  for (const cases::MatmulCase& c : cases::matmul_bf16_cases()) {
    const std::vector<uint16_t> a = bf16_randoms(c.m * c.k, 1), b = bf16_randoms(c.k * c.n, 2);
    std::vector<float> out = randoms(c.m * c.n, 3);
    for (double beta : c.betas)
      r.row(op, {c.name(), beta}, gemm_flops(c), gemm_bytes(c, 2, 4),
            [&] { k.matmul_bf16(r.ctx, out.data(), a.data(), b.data(), c.m, c.n, c.k, c.ta, c.tb, float(beta)); });
  }
  const Op out_op{"matmul_bf16_out", "matmul_bf16_out", true, k.matmul_bf16_out != nullptr};
  for (const cases::MatmulCase& c : cases::matmul_bf16_out_cases()) {
    const std::vector<uint16_t> a = bf16_randoms(c.m * c.k, 1), b = bf16_randoms(c.k * c.n, 2);
    std::vector<uint16_t> out = zeros<uint16_t>(c.m * c.n);
    r.row(out_op, {c.name()}, gemm_flops(c), gemm_bytes(c, 2, 2),
          [&] { k.matmul_bf16_out(r.ctx, out.data(), a.data(), b.data(), c.m, c.n, c.k, c.ta, c.tb); });
  }
}

// Causal attention: QK^T and PV, 2 D FLOPs each per (query, visible key) pair and head; the
// backward recomputes S and does 4 more such products (counted as the kernel table's rows count
// it, 2.5 times the forward). Bytes: q, k, v in and O, the log-sum-exp out; the backward also
// reads O and dO and writes dq, dk, dv.
struct AttentionWork {
  double fwd_flops, bwd_flops, fwd_bytes, bwd_bytes;
};
AttentionWork attention_work(const cases::AttentionCase& c) {
  double pairs = 0;
  for (int64_t t = 0; t < c.t; ++t) pairs += double(std::min(t, c.window) + 1);
  const double fwd = 4.0 * double(c.b * c.h) * pairs * double(c.d);
  const double q = 4.0 * double(c.b * c.t * c.h * c.d), kv = 4.0 * double(c.b * c.t * c.kvh * c.d);
  const double lse = 4.0 * double(c.b * c.h * c.t);
  return {fwd, 2.5 * fwd, 2 * q + 2 * kv + lse, 4 * q + 4 * kv + lse};
}

void time_attention_family(CaseRows& r, bool bf16) {
  const KernelTable& k = r.k;
  const char* family = bf16 ? "attention_bf16" : "attention";
  const auto fwd_fn = bf16 ? k.attention_fwd_bf16 : k.attention_fwd;
  const auto bwd_fn = bf16 ? k.attention_bwd_bf16 : k.attention_bwd;
  const Op fwd_op{family, bf16 ? "attention_fwd_bf16" : "attention_fwd", bf16, fwd_fn != nullptr};
  const Op bwd_op{family, bf16 ? "attention_bwd_bf16" : "attention_bwd", bf16, bwd_fn != nullptr};
  for (const cases::AttentionCase& c : bf16 ? cases::attention_bf16_cases() : cases::attention_cases()) {
    const int64_t nq = c.b * c.t * c.h * c.d, nk = c.b * c.t * c.kvh * c.d;
    const std::vector<float> q = randoms(nq, 50), kk = randoms(nk, 51), v = randoms(nk, 52), dout = randoms(nq, 53);
    std::vector<float> out = zeros(nq), lse = zeros(c.b * c.h * c.t), dq = zeros(nq), dk = zeros(nk), dv = zeros(nk);
    const AttentionWork w = attention_work(c);
    const auto fwd = [&] {
      fwd_fn(r.ctx, out.data(), lse.data(), q.data(), kk.data(), v.data(), c.b, c.t, c.h, c.kvh, c.d, c.window);
    };
    r.row(fwd_op, {c.name()}, w.fwd_flops, w.fwd_bytes, fwd);
    // The backward reads a forward's O and log-sum-exp.
    if (r.runs(bwd_op, {c.name()}) && r.can_run(fwd_op)) fwd();
    r.row(bwd_op, {c.name()}, w.bwd_flops, w.bwd_bytes, [&] {
      bwd_fn(r.ctx, dq.data(), dk.data(), dv.data(), dout.data(), q.data(), kk.data(), v.data(), out.data(), lse.data(), c.b,
             c.t, c.h, c.kvh, c.d, c.window);
    });
  }
}

// The row kernels on (rows, width): RMSNorm, the soft-capped cross-entropy over a vocabulary of
// `width` (its gradient over the logits, or into a bf16 operand), and the MLP activations. Each
// is rated by its compulsory bytes (e.g. RMSNorm's forward reads and writes n floats: 8 n).
void time_rows(CaseRows& r) {
  const KernelTable& k = r.k;
  for (const cases::RowsCase& c : cases::row_cases()) {
    const int64_t rows = c.rows, w = c.width, n = rows * w;
    const std::vector<float> x = randoms(n, 90, 3.0f), dy = randoms(n, 91), u = randoms(2 * n, 95, 3.0f);
    std::vector<float> out = zeros(2 * n), rstd = zeros(rows), dx = randoms(2 * n, 92), logits = randoms(n, 60, 10);
    std::vector<uint16_t> grad_h = zeros<uint16_t>(n);
    std::vector<int32_t> targets = zeros<int32_t>(rows);
    for (int64_t i = 0; i < rows; ++i) targets[size_t(i)] = int32_t((i * 37) % w);
    const double b = double(n);
    const CaseName cs{c.name()};
    const auto op = [](const char* name, bool bf16, bool present) { return Op{"rows", name, bf16, present}; };
    r.row(op("rmsnorm_fwd", false, k.rmsnorm_fwd), cs, 0, 8 * b,
          [&] { k.rmsnorm_fwd(r.ctx, out.data(), rstd.data(), x.data(), rows, w, 1e-6f); });
    r.row(op("rmsnorm_bwd", false, k.rmsnorm_bwd), cs, 0, 16 * b,
          [&] { k.rmsnorm_bwd(r.ctx, dx.data(), dy.data(), out.data(), rstd.data(), rows, w, true); });
    r.row(op("softcap_xent", false, k.softcap_xent), cs, 0, 8 * b,
          [&] { k.softcap_xent(r.ctx, logits.data(), out.data(), targets.data(), rows, w, 15.0f, 0.5f); });
    r.row(op("softcap_xent_bf16", true, k.softcap_xent_bf16), cs, 0, 6 * b,
          [&] { k.softcap_xent_bf16(r.ctx, logits.data(), out.data(), targets.data(), rows, w, 15.0f, 0.5f, grad_h.data()); });
    r.row(op("relu2_fwd", false, k.relu2_fwd), cs, 0, 8 * b, [&] { k.relu2_fwd(r.ctx, out.data(), x.data(), n); });
    r.row(op("relu2_bwd", false, k.relu2_bwd), cs, 0, 12 * b, [&] { k.relu2_bwd(r.ctx, dx.data(), dy.data(), x.data(), n); });
    r.row(op("gelu_fwd", false, k.gelu_fwd), cs, 0, 8 * b, [&] { k.gelu_fwd(r.ctx, out.data(), x.data(), n); });
    r.row(op("gelu_bwd", false, k.gelu_bwd), cs, 0, 12 * b, [&] { k.gelu_bwd(r.ctx, dx.data(), dy.data(), x.data(), n); });
    // SwiGLU reads rows of [gate | up] (rows, 2 width) and writes (rows, width); its backward
    // reads both and writes (rows, 2 width).
    r.row(op("swiglu_fwd", false, k.swiglu_fwd), cs, 0, 12 * b, [&] { k.swiglu_fwd(r.ctx, out.data(), u.data(), rows, w); });
    r.row(op("swiglu_bwd", false, k.swiglu_bwd), cs, 0, 20 * b,
          [&] { k.swiglu_bwd(r.ctx, dx.data(), dy.data(), u.data(), rows, w); });
  }
}

// The norms with a bf16 copy, as the bf16 step runs them: the forward writes fp32 and the copy,
// the backward reads the copy and accumulates into the residual's gradient.
void time_rows_bf16(CaseRows& r) {
  const KernelTable& k = r.k;
  const Op fwd{"rows_bf16", "rmsnorm_fwd_bf16", true, k.rmsnorm_fwd_bf16 != nullptr};
  const Op bwd{"rows_bf16", "rmsnorm_bwd_bf16", true, k.rmsnorm_bwd_bf16 != nullptr};
  for (const cases::RowsCase& c : cases::row_bf16_cases()) {
    const int64_t rows = c.rows, w = c.width, n = rows * w;
    const std::vector<float> x = randoms(n, 96, 3.0f), dy = randoms(n, 97);
    std::vector<float> out = zeros(n), rstd = zeros(rows), dx = randoms(n, 98);
    std::vector<uint16_t> out_h = zeros<uint16_t>(n), dx_h = zeros<uint16_t>(n);
    r.row(fwd, {c.name()}, 0, 10.0 * double(n),
          [&] { k.rmsnorm_fwd_bf16(r.ctx, out.data(), out_h.data(), rstd.data(), x.data(), rows, w, 1e-6f); });
    r.row(bwd, {c.name()}, 0, 16.0 * double(n),
          [&] { k.rmsnorm_bwd_bf16(r.ctx, dx.data(), dx_h.data(), dy.data(), out_h.data(), rstd.data(), rows, w, true); });
  }
}

// Rotary embedding and the fused QK-norm, in place on x (B, T, H, D).
void time_rope(CaseRows& r) {
  const KernelTable& k = r.k;
  for (const cases::RopeCase& c : cases::rope_cases()) {
    const int64_t n = c.b * c.t * c.h * c.d, half = c.d / 2, B = c.b, T = c.t, H = c.h, D = c.d;
    std::vector<float> x = randoms(n, 40), dx = randoms(n, 42), rstd = zeros(B * T * H);
    std::vector<float> cs = zeros(T * half), sn = zeros(T * half);
    for (int64_t p = 0; p < T; ++p)
      for (int64_t j = 0; j < half; ++j) {
        const double angle = double(p) * std::pow(10000.0, -2.0 * double(j) / double(D));
        cs[size_t(p * half + j)] = float(std::cos(angle)), sn[size_t(p * half + j)] = float(std::sin(angle));
      }
    const double b = double(n);
    const CaseName name{c.name()};
    const auto op = [](const char* entry, bool present) { return Op{"rope", entry, false, present}; };
    r.row(op("rope_fwd", k.rope_fwd), name, 0, 8 * b, [&] { k.rope_fwd(r.ctx, x.data(), cs.data(), sn.data(), B, T, H, D); });
    r.row(op("rope_bwd", k.rope_bwd), name, 0, 8 * b, [&] { k.rope_bwd(r.ctx, x.data(), cs.data(), sn.data(), B, T, H, D); });
    r.row(op("rope_norm_fwd", k.rope_norm_fwd), name, 0, 8 * b,
          [&] { k.rope_norm_fwd(r.ctx, x.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D, 1e-6f); });
    r.row(op("rope_norm_bwd", k.rope_norm_bwd), name, 0, 12 * b,
          [&] { k.rope_norm_bwd(r.ctx, dx.data(), x.data(), rstd.data(), cs.data(), sn.data(), B, T, H, D); });
  }
}

std::vector<const KernelTable*> case_tables(const BenchFlags& f) {
  const std::vector<const KernelTable*> cpu = backend_for_device("cpu").tables();
  const std::vector<std::string> names = split(f.case_tables);
  if (names.empty()) return cpu;
  std::vector<const KernelTable*> all = cpu, chosen;
  for (const KernelTable* t : backend_for_device("ref").tables()) all.push_back(t);
  for (const std::string& name : names) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const KernelTable* t) { return name == t->name; });
    if (it == all.end()) {
      std::string runnable;
      for (const KernelTable* t : all) runnable += std::string(runnable.empty() ? "" : ", ") + t->name;
      fail("--case-tables %s: not a kernel table this machine runs (%s)", name.c_str(), runnable.c_str());
    }
    if (std::find(chosen.begin(), chosen.end(), *it) == chosen.end()) chosen.push_back(*it);
  }
  return chosen;
}

// Every family's cases on one table, in the order the tests list them.
void time_table(CaseRows& r) {
  time_matmul_fp32(r);
  time_matmul_bf16(r);
  time_attention_family(r, false);
  time_attention_family(r, true);
  time_rows(r);
  time_rows_bf16(r);
  time_rope(r);
}

}  // namespace

void check_case_flags(const BenchFlags& f) {
  const std::vector<const KernelTable*> tables = case_tables(f);
  if (f.case_filter.empty()) return;
  CaseRows dry(f, *tables.front(), true);
  time_table(dry);
  if (dry.kept() == 0) fail("--case-filter %s: no op or case matches it", f.case_filter.c_str());
}

void run_case_table(const BenchFlags& f, nlohmann::json& out) {
  const std::vector<const KernelTable*> tables = case_tables(f);
  const int threads = setup_threads(f.threads);
  const std::string features = cpu_features().describe();
  const int reps = f.quick ? 1 : CaseRows::kReps;
  const std::string how =
      f.quick ? "one timed call a case (--quick)" : strf("the median of %d timed batches a case", reps);
  std::printf("nanotrain bench --kernel-cases: %d threads, %s; %s\n", threads, features.c_str(), how.c_str());
  out["machine"] = {{"host", hostname()},
                    {"threads", threads},
                    {"features", features},
                    {"kernels", backend_for_device("cpu").kernels().name}};
  nlohmann::json rows = nlohmann::json::array(), names = nlohmann::json::array();
  const auto t0 = Clock::now();
  for (size_t i = 0; i < tables.size(); ++i) {
    const KernelTable& t = *tables[i];
    std::fprintf(stderr, "bench: timing the kernel cases on %s (table %zu of %zu, %.0f s so far)\n", t.name, i + 1,
                 tables.size(), std::chrono::duration<double>(Clock::now() - t0).count());
    std::printf("\nkernel cases on %s:\n  %-16s %-19s %-34s %11s %14s\n", t.name, "family", "op", "case", "us", "rate");
    CaseRows r(f, t);
    time_table(r);
    names.push_back(t.name);
    for (auto& j : r.rows) rows.push_back(std::move(j));
  }
  std::printf("\n");
  out["kernel_cases"] = {{"tables", names}, {"reps", reps}, {"rows", rows}};
}

}  // namespace nt::cli::bench
