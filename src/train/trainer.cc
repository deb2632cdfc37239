// SPDX-License-Identifier: MIT
// The training job: open data, build the model, train under the budget (checkpointing, clean
// stops, non-finite guards), evaluate, sample, and write the run folder (config.json,
// metrics.jsonl, summary.json, model.safetensors, checkpoints/).
#include <omp.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/check.h"
#include "core/duration.h"
#include "core/files.h"
#include "core/system.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "eval/bpb.h"
#include "kernels/backend.h"
#include "eval/sampler.h"
#include "model/gpt.h"
#include "model/weights_io.h"
#include "optim/optimizer.h"
#include "profile/profile.h"
#include "train/checkpoint.h"
#include "train/default_data.h"
#include "train/loss_chart.h"
#include "train/progress.h"
#include "train/signals.h"
#include "train/time_budget.h"
#include "train/train_config.h"

namespace nt {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string default_run_dir() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

// "0" = never (only at the end); "N" = every N steps; a duration = every that much training time.
struct Interval {
  int64_t steps = 0;
  double seconds = 0;
  // Due at `step` (> 0) when `used` training seconds have passed since `last_at`.
  bool due(int64_t step, double used, double last_at) const {
    return step > 0 && ((steps > 0 && step % steps == 0) || (seconds > 0 && used - last_at >= seconds));
  }
};
Interval parse_interval(const char* flag, const std::string& s) {
  Interval e;
  if (s == "0") return e;
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), e.steps);
    if (ec != std::errc() || e.steps <= 0) fail("%s %s: step count out of range", flag, s.c_str());
    return e;
  }
  auto d = parse_duration(s);
  if (!d) fail("%s %s: expected 0, a step count, or a duration such as 60s", flag, s.c_str());
  e.seconds = *d;
  return e;
}

std::string human_bytes(double b) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, ++i;
  return strf("%.1f %s", b, u[i]);
}

void warn_line(const std::string& s) { std::fprintf(stderr, "nanotrain: warning: %s\n", s.c_str()); }

// Keeps the first `lines` lines of a metrics file (a resumed run rewrites what followed).
void truncate_lines(const std::string& path, int64_t lines) {
  if (!fs::exists(path)) return;
  std::istringstream in(read_file(path));
  std::string line, kept;
  for (int64_t i = 0; i < lines && std::getline(in, line); ++i) kept += line + "\n";
  write_file_atomic(path, kept);
}

// The first parameter whose gradient holds a non-finite value, or "" (and the total norm).
std::string first_bad_gradient(const KernelTable& k, const ParamArena& grads, double* norm) {
  double total = 0;
  std::string bad;
  for (size_t i = 0; i < grads.specs.size(); ++i) {
    const double ss = k.sum_squares(grads.tensor(i), grads.specs[i].numel());
    if (!std::isfinite(ss) && bad.empty()) bad = grads.specs[i].name;
    total += ss;
  }
  *norm = std::sqrt(total);
  return bad;
}

}  // namespace

TrainSummary run_training(const TrainConfig& given) {
  const auto wall0 = Clock::now();
  // ---- Resume: the run's own settings from its newest valid checkpoint.
  TrainConfig cfg = given;
  std::optional<CheckpointData> resume;
  if (!given.resume.empty()) {
    resume = newest_valid_checkpoint(given.resume, warn_line);
    cfg = TrainConfig::from_json(resume->train);
    cfg.run_dir = given.resume;
    cfg.threads = given.threads;
    cfg.quiet = given.quiet;
  }
  // ---- Validate flags that do not need the data.
  double budget_s = 0;
  if (cfg.steps < 0) fail("--steps %lld: must be positive", (long long)cfg.steps);
  if (cfg.steps == 0) {
    auto d = parse_duration(cfg.time_budget);
    if (!d) fail("--time-budget %s: expected a positive duration such as 90s, 5m, 1h", cfg.time_budget.c_str());
    budget_s = *d;
  }
  if (cfg.batch_size < 0) fail("--batch-size %d: must be positive", cfg.batch_size);
  if (cfg.eval_batch_size < 0) fail("--eval-batch-size %d: must be positive", cfg.eval_batch_size);
  if (cfg.eval_tokens < 0) fail("--eval-tokens %lld: must be >= 0", (long long)cfg.eval_tokens);
  if (cfg.total_batch_tokens < 0) fail("--total-batch-tokens %lld: must be positive", (long long)cfg.total_batch_tokens);
  if (cfg.threads < 0) fail("--threads %d: must be >= 0", cfg.threads);
  if (cfg.sample_tokens < 0) fail("--sample-tokens %d: must be >= 0", cfg.sample_tokens);
  if (cfg.peak_gflops < 0) fail("--peak-gflops %g: must be positive", cfg.peak_gflops);
  if (cfg.keep_checkpoints < 1) fail("--keep-checkpoints %d: must be at least 1", cfg.keep_checkpoints);
  if (cfg.on_nan != "stop" && cfg.on_nan != "rollback") fail("--on-nan %s: expected stop or rollback", cfg.on_nan.c_str());
  cfg.schedule.validate();
  const Interval eval_every = parse_interval("--eval-every", cfg.eval_every);
  const Interval save_every = parse_interval("--save-every", cfg.save_every);
  if (cfg.packing != "bestfit" && cfg.packing != "stream")
    fail("--packing %s: expected bestfit or stream", cfg.packing.c_str());
  const PackMode pack_mode = cfg.packing == "stream" ? PackMode::Stream : PackMode::BestFit;
  const Backend& backend = backend_for_device(cfg.device);
  const KernelTable& kernels = backend.kernels();
  const Precision prec = cfg.dtype.empty()
                             ? backend.default_precision()
                             : parse_precision(cfg.dtype.c_str());
  const int threads = setup_threads(cfg.threads);

  // ---- Data and model shape.
  if (cfg.data_dir == kDefaultDataDir) ensure_default_data(cfg.quiet);
  Dataset ds = open_dataset(cfg.data_dir);
  const Tokenizer& tok = *ds.tokenizer;
  ModelConfig mc = resolve_model_config(cfg.shape, int(tok.vocab_size()));
  if (uint32_t(mc.vocab_size) < tok.vocab_size())
    fail("--vocab-size %d: smaller than the data's tokenizer vocabulary (%u)", mc.vocab_size, tok.vocab_size());
  if (resume && resume->model.to_json() != mc.to_json())
    fail("%s: the checkpoint's model shape differs from its run's configuration", resume->path.c_str());
  const int B = cfg.batch_size > 0 ? cfg.batch_size : (cfg.shape.preset == "frontier" ? 4 : 16);
  const int T = mc.seq_len;
  const int64_t micro_tokens = int64_t(B) * T;
  const int64_t step_tokens = cfg.total_batch_tokens > 0 ? cfg.total_batch_tokens : micro_tokens;
  if (step_tokens % micro_tokens != 0)
    fail("--total-batch-tokens %lld: must be a multiple of --batch-size x seq_len = %lld", (long long)step_tokens,
         (long long)micro_tokens);
  const int64_t accum = step_tokens / micro_tokens;
  OptimConfig oc = cfg.optim;
  oc.resolve(mc.d_model);
  oc.bf16_newton_schulz = prec == Precision::kBf16;
  const int eval_B = cfg.eval_batch_size > 0 ? cfg.eval_batch_size : B;

  // ---- Memory: refuse before allocating if it cannot fit.
  const int64_t n_params = count_params(mc), n_matmul = count_matmul_params(mc);
  const std::vector<ParamSpec> specs = param_specs(mc);  // sizes only; nothing allocated yet
  const size_t param_bytes = arena_numel(specs) * sizeof(float);
  const size_t state_bytes = Optimizer::state_floats(specs, threads, oc.bf16_newton_schulz) * sizeof(float);
  const size_t act_bytes = Gpt::activation_bytes(mc, std::max(B, eval_B), T, prec);
  const size_t need = 2 * param_bytes + state_bytes + act_bytes;
  const size_t avail = available_memory_bytes();
  TrainProgress progress(cfg.quiet);
  progress.print(strf("nanotrain %s | device %s (%s) | %s | cpu features: %s | threads %d", NT_VERSION,
                      cfg.device.c_str(), kernels.name, precision_name(prec), backend.describe().c_str(), threads));
  progress.print(strf("model: preset %s, depth %d, d_model %d, heads %d (kv %d) x %d, seq %d, vocab %d | params %lld "
                      "(%lld matmul, %lld embedding)",
                      cfg.shape.preset.c_str(), mc.depth, mc.d_model, mc.n_head, mc.n_kv_head, mc.head_dim, mc.seq_len,
                      mc.vocab_size, (long long)n_params, (long long)n_matmul, (long long)(n_params - n_matmul)));
  progress.print(strf("memory: params %s + grads %s + optimizer %s + activations %s = %s (available %s)",
                      human_bytes(double(param_bytes)).c_str(), human_bytes(double(param_bytes)).c_str(),
                      human_bytes(double(state_bytes)).c_str(), human_bytes(double(act_bytes)).c_str(),
                      human_bytes(double(need)).c_str(), human_bytes(double(avail)).c_str()));
  if (avail > 0 && double(need) > 0.9 * double(avail))
    fail("this run needs about %s but only %s of memory is available; lower --batch-size or the model size",
         human_bytes(double(need)).c_str(), human_bytes(double(avail)).c_str());

  // ---- Run folder.
  const std::string run_dir = cfg.run_dir.empty() ? default_run_dir() : cfg.run_dir;
  cfg.run_dir = run_dir;  // checkpoints record where they belong
  make_dirs(run_dir);
  const std::string tok_spec = tok.save_to_dir(run_dir);
  // MFU is against the compute peak of this run's precision on this CPU, measured here before the
  // clock starts (every thread's best of three 50 ms tries) and again after the last step, for
  // the summary: an assumed figure would be one machine's, and AVX-512 cores of different
  // generations differ by 2x in it (Zen 5 against Zen 4, Intel's AMX against its dot products).
  const bool measure_peak = cfg.peak_gflops <= 0;
  ComputePeak peak{cfg.peak_gflops, ""};
  if (measure_peak) peak = backend.measure_peak(prec, 0.05, 3);
  auto peak_source = [&] {
    if (!measure_peak) return std::string("--peak-gflops");
    return strf("measured now: %.0f GFLOP/s (%s)", peak.gflops, peak.unit);
  };
  nlohmann::json config_json = {
      {"program", "nanotrain"}, {"version", NT_VERSION}, {"model", mc.to_json()}, {"optimizer", oc.to_json()},
      {"schedule", {{"warmup_frac", cfg.schedule.warmup_frac}, {"warmdown_frac", cfg.schedule.warmdown_frac},
                    {"final_lr_frac", cfg.schedule.final_lr_frac}}},
      {"preset", cfg.shape.preset}, {"data_dir", cfg.data_dir}, {"tokenizer", tok_spec},
      {"tokenizer_id", to_hex(tok.identity())}, {"device", cfg.device}, {"kernels", kernels.name},
      {"dtype", precision_name(prec)}, {"time_budget_seconds", budget_s}, {"steps", cfg.steps}, {"batch_size", B}, {"seq_len", T},
      {"total_batch_tokens", step_tokens}, {"grad_accum_steps", accum}, {"seed", cfg.seed}, {"packing", cfg.packing},
      {"eval_every", cfg.eval_every}, {"eval_tokens", cfg.eval_tokens}, {"eval_batch_size", eval_B},
      {"save_every", cfg.save_every}, {"keep_checkpoints", cfg.keep_checkpoints}, {"on_nan", cfg.on_nan},
      {"threads", threads}, {"peak_gflops", peak.gflops}, {"flags", cfg.to_json()}};
  write_file_atomic((fs::path(run_dir) / "config.json").string(), config_json.dump(2) + "\n");
  progress.print("config: " + config_json.dump());
  const std::string metrics_path = (fs::path(run_dir) / "metrics.jsonl").string();
  int64_t metrics_lines = 0;
  if (resume) {
    metrics_lines = resume->state.metrics_lines;
    truncate_lines(metrics_path, metrics_lines);
  }
  std::ofstream metrics(metrics_path, resume ? std::ios::app : std::ios::trunc);
  if (!metrics) fail("%s: cannot write", metrics_path.c_str());
  auto log_metric = [&](const nlohmann::json& j) {
    metrics << j.dump() << "\n";
    metrics.flush();
    if (!metrics) fail("%s: write failed: %s", metrics_path.c_str(), std::strerror(errno));
    ++metrics_lines;
  };
  progress.print(strf("run folder: %s | batch %d x %d tokens, %lld micro-batch(es) per step (%lld tokens) | %s",
                      run_dir.c_str(), B, T, (long long)accum, (long long)step_tokens,
                      cfg.steps > 0 ? strf("%lld steps", (long long)cfg.steps).c_str()
                                    : ("budget " + format_duration(budget_s)).c_str()));

  // ---- Model, optimizer, loaders, and the state a checkpoint restores.
  Gpt model(mc, kernels, std::max(B, eval_B), T, prec);
  init_params(model.params(), cfg.seed);
  Optimizer opt(oc, model.params(), kernels);
  TrainLoader loader(ds.train, B, T, cfg.seed, 0, 1, pack_mode);
  ValLoader val(ds.val, eval_B, T, uint64_t(cfg.eval_tokens));
  std::vector<int32_t> inputs(static_cast<size_t>(micro_tokens)), targets(static_cast<size_t>(micro_tokens));
  TimeBudget budget(budget_s);
  int64_t step = 0, rollbacks = 0, last_saved_step = -1;
  double eval_seconds = 0, save_seconds = 0, data_seconds = 0, last_eval_at = 0, last_save_at = 0;
  auto restore = [&](const CheckpointData& ck) {
    restore_checkpoint(ck, model.params(), opt.m().data(), opt.v().data());
    const TrainState& s = ck.state;
    step = s.step;
    opt.set_steps_taken(s.optimizer_steps);
    opt.set_lr_scale(s.lr_scale);
    try {
      loader.set_state(s.loader);
    } catch (const Error& e) {
      fail("%s: %s", ck.path.c_str(), e.what());
    }
    budget.restore(s.train_seconds, s.recent_step_seconds);
    eval_seconds = s.eval_seconds;
    save_seconds = s.save_seconds;
    data_seconds = s.data_seconds;
    last_eval_at = s.last_eval_at;
    last_save_at = s.last_save_at;
    rollbacks = s.rollbacks;
    last_saved_step = step;
  };
  if (resume) {
    restore(*resume);
    progress.print(strf("resumed from %s: step %lld, %s of training done", resume->path.c_str(), (long long)step,
                        format_duration(budget.used()).c_str()));
    resume.reset();  // release the checkpoint's copy of the tensors
  }
  auto save = [&]() {
    profile::Zone zone(profile::kCheckpoint);
    const auto ts = Clock::now();
    last_save_at = budget.used();
    TrainState state;
    state.step = step;
    state.optimizer_steps = opt.steps_taken();
    state.lr_scale = opt.lr_scale();
    state.loader = loader.state();
    state.train_seconds = budget.used();
    state.recent_step_seconds = budget.recent();
    state.eval_seconds = eval_seconds;
    state.save_seconds = save_seconds;
    state.data_seconds = data_seconds;
    state.last_eval_at = last_eval_at;
    state.last_save_at = last_save_at;
    state.rollbacks = rollbacks;
    state.metrics_lines = metrics_lines;
    const std::string path = checkpoint_path(run_dir, step);
    write_checkpoint(path, mc, cfg.to_json(), state, model.params(), opt.m().data(), opt.v().data());
    prune_checkpoints(run_dir, cfg.keep_checkpoints);
    last_saved_step = step;
    save_seconds += since(ts);
    progress.print(strf("step %lld | checkpoint %s (%.1fs, not charged)", (long long)step, path.c_str(), since(ts)));
  };

  const double fpt = flops_per_token(mc, T);
  double last_loss = NAN;
  BpbResult last_eval;
  auto run_eval = [&]() {
    profile::Zone zone(profile::kEval);
    last_eval = evaluate_bpb(model, val, tok, eval_B, T);
    eval_seconds += last_eval.seconds;
    last_eval_at = budget.used();
    log_metric({{"type", "eval"}, {"step", step}, {"train_seconds", budget.used()}, {"val_bpb", last_eval.bpb},
                {"val_loss", last_eval.loss}, {"val_targets", last_eval.targets}, {"eval_seconds", last_eval.seconds}});
    progress.print(strf("step %lld | val_bpb %.4f | val_loss %.4f | %llu targets in %.1fs (not charged)",
                        (long long)step, last_eval.bpb, last_eval.loss, (unsigned long long)last_eval.targets,
                        last_eval.seconds));
  };
  // A non-finite loss or gradient: stop naming the culprit, or roll back with halved LRs.
  auto on_non_finite = [&](const std::string& what) {
    const auto ckpts = list_checkpoints(run_dir);
    const std::string last_good = ckpts.empty() ? "none" : ckpts.front();
    if (cfg.on_nan == "rollback" && !ckpts.empty() && rollbacks < 3) {
      // The rollback count and the halved scale outlive the restore (the checkpoint is older).
      const double scale = opt.lr_scale();
      const int64_t bad_step = step, done = rollbacks;
      restore(newest_valid_checkpoint(run_dir, warn_line));
      rollbacks = done + 1;
      opt.set_lr_scale(scale * 0.5);
      progress.print(strf("step %lld: %s; rolled back to step %lld with learning rates x%.3g", (long long)bad_step,
                          what.c_str(), (long long)step, opt.lr_scale()));
      return;
    }
    fail("step %lld: %s; the last good checkpoint is %s%s", (long long)step, what.c_str(), last_good.c_str(),
         cfg.on_nan == "rollback" ? " (no rollback left)" : " (--on-nan rollback retries from it)");
  };

  StopSignals signals;
  if (cfg.profile) profile::enable(true);
  for (;;) {
    if (const int sig = StopSignals::requested()) {
      if (last_saved_step != step) save();
      progress.finish();
      throw Interrupted{sig, strf("stopped by %s at step %lld; resume with: nanotrain train --resume %s",
                                  sig == 2 ? "SIGINT" : "SIGTERM", (long long)step, run_dir.c_str())};
    }
    const bool last = cfg.steps > 0 ? step >= cfg.steps : (step > 0 && budget.next_step_would_overrun());
    if (last) break;
    if (eval_every.due(step, budget.used(), last_eval_at) && last_eval_at < budget.used()) run_eval();
    if (save_every.due(step, budget.used(), last_save_at) && last_saved_step != step) save();
    const double progress_frac = cfg.steps > 0 ? double(step) / double(cfg.steps) : budget.progress();
    const double lrm = cfg.schedule.multiplier(progress_frac);
    const auto t0 = Clock::now();
    std::optional<profile::Zone> step_zone(std::in_place, profile::kStep);
    double loss = 0;
    for (int64_t a = 0; a < accum; ++a) {
      const auto td = Clock::now();
      {
        profile::Zone zone(profile::kData);
        loader.next(inputs.data(), targets.data());
      }
      data_seconds += since(td);
      // The first micro-batch overwrites the gradients, the rest add to them.
      loss += model.forward_backward(inputs.data(), targets.data(), B, T, 1.0 / double(accum), a > 0) /
              double(accum);
    }
    double grad_norm = 0;
    const std::string bad = first_bad_gradient(kernels, model.grads(), &grad_norm);
    if (!std::isfinite(loss) || !bad.empty()) {
      on_non_finite(!std::isfinite(loss) ? strf("the loss is not finite (%g)", loss)
                                         : "the gradient of " + bad + " is not finite");
      continue;
    }
    {
      profile::Zone zone(profile::kOptimizer);
      opt.step(model.params(), model.grads(), lrm);
    }
    step_zone.reset();
    const double dt = since(t0);
    budget.charge(dt);
    ++step;
    last_loss = loss;
    const double tps = double(step_tokens) / dt;
    const double mfu = tps * fpt / (peak.gflops * 1e9);
    log_metric({{"type", "step"}, {"step", step}, {"loss", loss}, {"grad_norm", grad_norm}, {"lr_mult", lrm},
                {"train_seconds", budget.used()}, {"step_seconds", dt}, {"tokens", step * step_tokens},
                {"tokens_per_second", tps}, {"mfu", mfu}});
    const std::string left = cfg.steps > 0 ? strf("%lld steps left", (long long)(cfg.steps - step))
                                           : format_duration(std::max(0.0, budget_s - budget.used())) + " left";
    progress.update(strf("%s / %s | step %lld | loss %.4f | lr x%.3f | %.0f tok/s | MFU %.1f%% | %s",
                         format_duration(budget.used()).c_str(),
                         cfg.steps > 0 ? strf("%lld steps", (long long)cfg.steps).c_str() : format_duration(budget_s).c_str(),
                         (long long)step, loss, lrm, tps, 100 * mfu, left.c_str()),
                    step == 1);
  }
  progress.finish();
  // Something on the machine can slow the tries before the first step (seen here: half the peak
  // in 3 of a dozen runs started back to back), never speed them up: the summary's MFU is
  // against the better of the two measurements.
  if (measure_peak) peak.gflops = std::max(peak.gflops, backend.measure_peak(prec, 0.05, 3).gflops);
  run_eval();
  if (last_saved_step != step) save();  // always a checkpoint at the end
  if (cfg.profile) {
    profile::enable(false);
    progress.print(profile::report(fpt * double(step_tokens), peak.gflops, peak_source()));
    profile::write_trace((fs::path(run_dir) / "trace.json").string());
    const profile::Totals pt = profile::totals();
    const std::string subtitle =
        strf("depth %d, d_model %d, T %d, %lld tokens a step, %s: %.0f ms a step, MFU %.1f %% of %.0f GFLOP/s",
             mc.depth, mc.d_model, T, (long long)step_tokens, precision_name(prec),
             pt.steps > 0 ? pt.step_ms / double(pt.steps) : 0.0,
             100.0 * pt.step_gflops(fpt * double(step_tokens)) / peak.gflops, peak.gflops);
    write_file_atomic((fs::path(run_dir) / "profile.svg").string(),
                      profile::chart_svg("nanotrain train: where a step's time goes", subtitle));
  }

  // ---- Weights, sample, summary.
  const auto ts = Clock::now();
  save_weights((fs::path(run_dir) / "model.safetensors").string(), mc, model.params(),
               {{"tokenizer", tok_spec}, {"tokenizer_id", to_hex(tok.identity())}});
  save_seconds += since(ts);
  std::string sample_text;
  double sample_seconds = 0;
  if (cfg.sample_tokens > 0) {
    const auto tsm = Clock::now();
    std::vector<uint32_t> prompt{tok.bos_id()};
    tok.encode(cfg.sample_prompt, prompt);
    if (int64_t(prompt.size()) < mc.seq_len) {
      SampleOptions so;
      so.max_tokens = cfg.sample_tokens;
      so.seed = cfg.seed;
      auto ids = sample_tokens(model, prompt, so);
      sample_text = cfg.sample_prompt + tok.decode(ids);
    }
    sample_seconds = since(tsm);
  }
  const double train_s = budget.used();
  const int64_t tokens = step * step_tokens;
  nlohmann::json summary = {
      {"val_bpb", last_eval.bpb},
      {"val_loss", last_eval.loss},
      {"val_targets", last_eval.targets},
      {"final_train_loss", last_loss},
      {"train_seconds", train_s},
      {"time_budget_seconds", budget_s},
      {"budget_overshoot_seconds", budget_s > 0 ? train_s - budget_s : 0.0},
      {"mean_step_seconds", step > 0 ? train_s / double(step) : 0.0},
      {"steps", step},
      {"tokens_trained", tokens},
      {"tokens_per_second", train_s > 0 ? double(tokens) / train_s : 0.0},
      {"mfu", train_s > 0 ? double(tokens) / train_s * fpt / (peak.gflops * 1e9) : 0.0},
      {"peak_gflops", peak.gflops},
      {"peak_source", peak_source()},
      {"flops_per_token", fpt},
      {"params_total", n_params},
      {"params_matmul", n_matmul},
      {"threads", threads},
      {"preset", cfg.shape.preset},
      {"device", cfg.device},
      {"kernels", kernels.name},
      {"dtype", precision_name(prec)},
      {"eval_seconds", eval_seconds},
      {"data_seconds", data_seconds},
      {"save_seconds", save_seconds},
      {"sample_seconds", sample_seconds},
      {"rollbacks", rollbacks},
      {"wall_seconds", since(wall0)},
      {"peak_rss_bytes", peak_rss_bytes()},
      {"estimated_memory_bytes", need},
      {"sample", sample_text},
      {"run_dir", run_dir},
  };
  write_file_atomic((fs::path(run_dir) / "summary.json").string(), summary.dump(2) + "\n");
  write_file_atomic((fs::path(run_dir) / "loss.svg").string(),
                    loss_chart_svg(read_file(metrics_path), "nanotrain train: loss",
                                   strf("%s: depth %d, d_model %d, T %d, %s; %lld steps, %lld tokens in %.1f s; val_bpb "
                                        "%.4f",
                                        cfg.shape.preset.c_str(), mc.depth, mc.d_model, T, precision_name(prec),
                                        (long long)step, (long long)tokens, train_s, last_eval.bpb)));
  return {summary};
}

}  // namespace nt
