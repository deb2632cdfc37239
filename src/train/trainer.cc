// SPDX-License-Identifier: MIT
// The training job in order: settings (or a resumed run's own), data and plan, run folder,
// the loop, then the final evaluation, checkpoint, weights, sample, summary and charts.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/check.h"
#include "core/files.h"
#include "core/system.h"
#include "data/dataset.h"
#include "eval/sampler.h"
#include "kernels/backend.h"
#include "model/weights_io.h"
#include "profile/profile.h"
#include "train/checkpoint.h"
#include "train/default_data.h"
#include "train/loss_chart.h"
#include "train/progress.h"
#include "train/ranks.h"
#include "train/run_folder.h"
#include "train/train_loop.h"
#include "train/train_plan.h"

namespace nt {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The flags, or with --resume the run's own settings from its newest valid checkpoint (only
// the per-invocation ones, such as --threads, taken from the command line).
TrainConfig settings(const TrainConfig& given, const RunFolder& run, std::optional<CheckpointData>& resume) {
  if (given.resume.empty()) return given;
  resume = shared_checkpoint(dist::world(), run);
  TrainConfig cfg = TrainConfig::from_json(resume->train);
  copy_fields_if(cfg, given, [](const FieldInfo& f) { return f.resume_may_change; });
  cfg.run_dir = given.resume;
  return cfg;
}

// The MFU's peak: --peak-gflops (the whole job's), or this precision's compute peak measured on
// this machine before the clock starts and again after the last step (an assumed figure would be
// one machine's; the better of the two measurements counts, since other processes can only lower
// it). Over several ranks every rank measures its own share at once (its threads, its cores) and
// the job's peak is their sum, as its tokens/s is. Construction and remeasure() are collective.
struct Peak {
  const Backend& backend;
  const Precision prec;
  const bool measured;
  dist::Comm& comm;
  double gflops = 0;
  std::string unit;

  Peak(const TrainPlan& p, dist::Comm& c)
      : backend(*p.backend), prec(p.prec), measured(p.cfg.peak_gflops <= 0), comm(c) {
    gflops = p.cfg.peak_gflops;
    if (measured) {
      const ComputePeak m = backend.measure_peak(prec, 0.05, 3);
      gflops = job_sum(m.gflops), unit = m.unit;
    }
  }
  void remeasure() {
    if (measured) gflops = std::max(gflops, job_sum(backend.measure_peak(prec, 0.05, 3).gflops));
  }
  double job_sum(double rank_gflops) {
    comm.allreduce_sum(&rank_gflops, 1);
    return rank_gflops;
  }
  std::string source() const {
    if (!measured) return "--peak-gflops";
    const std::string over = comm.size() > 1 ? strf(", the sum over %d ranks", comm.size()) : "";
    return strf("measured now: %.0f GFLOP/s (%s%s)", gflops, unit.c_str(), over.c_str());
  }
};

// --profile's report on the terminal, trace.json and profile.svg.
void write_profile(const TrainPlan& p, const RunFolder& run, TrainProgress& progress, const Peak& peak) {
  const double step_flops = p.flops_per_token * double(p.step_tokens);
  profile::enable(false);
  progress.print(profile::report(step_flops, peak.gflops, peak.source()));
  profile::write_trace(run.trace_path());
  const profile::Totals pt = profile::totals();
  const std::string subtitle =
      strf("depth %d, d_model %d, T %d, %lld tokens a step, %s: %.0f ms a step, MFU %.1f %% of %.0f GFLOP/s",
           p.model.depth, p.model.d_model, p.T, (long long)p.step_tokens, precision_name(p.prec),
           pt.steps > 0 ? pt.step_ms / double(pt.steps) : 0.0, 100.0 * pt.step_gflops(step_flops) / peak.gflops,
           peak.gflops);
  run.write_text(run.profile_chart_path(), profile::chart_svg("nanotrain train: where a step's time goes", subtitle));
}

// The final sample after the prompt ("" when the prompt fills the context).
std::string final_sample(const TrainConfig& cfg, const ModelConfig& mc, Gpt& model, const Tokenizer& tok) {
  std::vector<uint32_t> prompt{tok.bos_id()};
  tok.encode(cfg.sample_prompt, prompt);
  if (int64_t(prompt.size()) >= mc.seq_len) return "";
  SampleOptions so;
  so.max_tokens = cfg.sample_tokens;
  so.seed = cfg.seed;
  auto ids = sample_tokens(model, prompt, so);
  return cfg.sample_prompt + tok.decode(ids);
}

TrainSummary summarize(const TrainPlan& p, TrainLoop& loop, const Peak& peak) {
  TrainSummary s;
  const double train_s = loop.train_seconds();
  const int64_t tokens = loop.tokens();
  s.val_bpb = loop.last_eval().bpb, s.val_loss = loop.last_eval().loss, s.val_targets = loop.last_eval().targets;
  s.final_train_loss = loop.last_loss();
  s.train_seconds = train_s;
  s.time_budget_seconds = p.budget_s;
  s.budget_overshoot_seconds = p.budget_s > 0 ? train_s - p.budget_s : 0.0;
  s.mean_step_seconds = loop.steps() > 0 ? train_s / double(loop.steps()) : 0.0;
  s.steps = loop.steps();
  s.tokens_trained = tokens;
  s.tokens_per_second = train_s > 0 ? double(tokens) / train_s : 0.0;
  s.mfu = train_s > 0 ? double(tokens) / train_s * p.flops_per_token / (peak.gflops * 1e9) : 0.0;
  s.peak_gflops = peak.gflops;
  s.peak_source = peak.source();
  s.flops_per_token = p.flops_per_token;
  s.params_total = p.n_params, s.params_matmul = p.n_matmul;
  s.threads = p.threads;
  s.preset = p.cfg.shape.preset, s.device = p.cfg.device, s.kernels = p.kernels->name, s.dtype = precision_name(p.prec);
  s.eval_seconds = loop.eval_seconds(), s.data_seconds = loop.data_seconds(), s.save_seconds = loop.save_seconds();
  s.rollbacks = loop.rollbacks();
  if (!p.cfg.core_bundle.empty()) {
    s.core_run = true;
    if (loop.last_core()) s.core = loop.last_core()->core, s.core_tasks = core_tasks_json(*loop.last_core());
    s.core_seconds = loop.core_seconds();
    s.core_error = loop.core_error();
  }
  s.peak_rss_bytes = peak_rss_bytes();
  s.estimated_memory_bytes = p.memory.need();
  s.run_dir = p.cfg.run_dir;
  return s;
}

// The folder is claimed first (its lock), so that nothing reads or writes it while another
// process does. Over several ranks, rank 0 claims and writes it; the others only know its name.
RunFolder claim_run_folder(const TrainConfig& given, dist::Comm& comm) {
  std::string dir = !given.resume.empty() ? given.resume : !given.run_dir.empty() ? given.run_dir : default_run_dir();
  dist::broadcast_string(comm, dir);
  return RunFolder(dir, comm.rank() != 0       ? RunMode::kFollower
                        : !given.resume.empty() ? RunMode::kResume
                        : given.overwrite       ? RunMode::kOverwrite
                                                : RunMode::kNew);
}

}  // namespace

TrainSummary run_training(const TrainConfig& given) {
  const auto wall0 = Clock::now();
  if (!given.resume.empty() && given.overwrite) fail("--overwrite: cannot be combined with --resume");
  dist::Comm& comm = dist::world();
  const bool leader = comm.rank() == 0;
  RunFolder run = claim_run_folder(given, comm);
  std::optional<CheckpointData> resume;
  TrainPlan plan = plan_settings(settings(given, run, resume));
  plan.cfg.run_dir = run.dir();  // checkpoints record where they belong
  const TrainConfig& cfg = plan.cfg;
  // A bad bundle fails here, before anything is written to the run folder. Over several ranks,
  // rank 0 evaluates CORE alone.
  std::optional<TrainCore> core;
  if (!cfg.core_bundle.empty() && leader) core.emplace(cfg.core_bundle, cfg.core_max_per_task);
  if (cfg.data_dir == kDefaultDataDir && leader) ensure_default_data(cfg.quiet);
  comm.barrier();
  Dataset ds = open_dataset(cfg.data_dir);
  const Tokenizer& tok = *ds.tokenizer;
  plan_model(plan, tok);
  if (resume && resume->model.to_json() != plan.model.to_json())
    fail("%s: the checkpoint's model shape differs from its run's configuration", resume->path.c_str());
  TrainProgress progress(cfg.quiet || !leader);
  progress.print(plan_device_line(plan));
  progress.print(plan_model_line(plan));
  progress.print(plan_memory_line(plan));
  check_memory(plan);

  const std::string tok_spec = run.save_tokenizer(tok);
  Peak peak(plan, comm);
  const nlohmann::json config = config_json(plan, run.run_id(), tok_spec, tok, peak.gflops, ds.train_tokens());
  run.write_json(run.config_path(), config);
  progress.print("config: " + config.dump());
  run.open_metrics(resume ? resume->state.metrics_lines : 0);
  if (cfg.tensorboard) run.open_tensorboard();
  progress.print("run folder: " + run.dir() + " | " + plan_batch_line(plan));

  TrainLoop loop(plan, ds, run, progress, peak.gflops);
  if (core) loop.set_core(&*core);
  if (resume) {
    loop.resume_from(*resume);
    resume.reset();  // release the checkpoint's copy of the tensors
  }
  loop.run();
  // The trained model is on disk (a checkpoint and the weights) before anything else can fail.
  // Every rank takes part in the checkpoint (it gathers the sharded optimizer state).
  loop.save_if_new();
  const nlohmann::json ranks = loop.rank_report();
  if (leader) {
    const auto ts = Clock::now();
    save_weights(run.weights_path(), plan.model, loop.model().params(),
                 {{"tokenizer", tok_spec}, {"tokenizer_id", to_hex(tok.identity())}});
    loop.add_save_seconds(since(ts));
  }
  peak.remeasure();  // every rank, at once
  loop.evaluate();  // every rank evaluates its share
  if (!leader) return TrainSummary{};  // rank 0 writes the run's last files
  if (loop.core_enabled() && loop.last_core_step() != loop.steps()) loop.evaluate_core();
  if (cfg.profile) write_profile(plan, run, progress, peak);
  std::string sample;
  double sample_seconds = 0;
  if (cfg.sample_tokens > 0) {
    const auto tsm = Clock::now();
    sample = final_sample(cfg, plan.model, loop.model(), tok);
    sample_seconds = since(tsm);
  }
  TrainSummary s = summarize(plan, loop, peak);
  s.set_ranks(ranks);
  s.sample = sample;
  s.sample_seconds = sample_seconds;
  s.wall_seconds = since(wall0);
  run.write_json(run.summary_path(), s.to_json());
  const ModelConfig& mc = plan.model;
  run.write_text(run.loss_chart_path(),
                 loss_chart_svg(run.read_metrics(), "nanotrain train: loss",
                                strf("%s: depth %d, d_model %d, T %d, %s; %lld steps, %lld tokens in %.1f s; val_bpb %.4f",
                                     cfg.shape.preset.c_str(), mc.depth, mc.d_model, plan.T, precision_name(plan.prec),
                                     (long long)s.steps, (long long)s.tokens_trained, s.train_seconds, s.val_bpb)));
  return s;
}

}  // namespace nt
