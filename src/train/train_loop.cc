// SPDX-License-Identifier: MIT
#include "train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "core/check.h"
#include "core/duration.h"
#include "core/sha256.h"
#include "profile/profile.h"
#include "train/ranks.h"
#include "train/trainer.h"

namespace nt {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The parameters initialised from the seed (before the optimizer sees them).
ParamArena& init_model(Gpt& model, uint64_t seed) {
  init_params(model.params(), seed);
  return model.params();
}

// The first parameter whose gradient holds a non-finite value, or "" (and the total norm). Over
// several ranks (owners not empty) each tensor's sum of squares comes from its owner, the only
// rank holding its summed gradient; the total adds them in table order, as one process does.
std::string first_bad_gradient(const KernelTable& k, const ExecContext& ctx, const ParamArena& grads, double* norm,
                               dist::Comm& c, const std::vector<int>& owners) {
  std::vector<double> ss(grads.specs.size(), 0.0);
  for (size_t i = 0; i < grads.specs.size(); ++i)
    if (owners.empty() || owners[i] == c.rank()) ss[i] = k.sum_squares(ctx, grads.tensor(i), grads.specs[i].numel());
  if (!owners.empty()) c.allreduce_sum(ss.data(), ss.size());  // each entry is one rank's, the rest add 0
  double total = 0;
  std::string bad;
  for (size_t i = 0; i < grads.specs.size(); ++i) {
    if (!std::isfinite(ss[i]) && bad.empty()) bad = grads.specs[i].name;
    total += ss[i];
  }
  *norm = std::sqrt(total);
  return bad;
}

// Over several ranks, the progress line's share of the step spent communicating, and the
// slowest rank where its micro-batches took a tenth longer than the mean.
std::string comm_note(const StepComm& sc, double step_seconds) {
  if (sc.rank_compute_s.empty()) return "";
  std::string note = strf(" | comm %.0f%%", 100.0 * sc.seconds / step_seconds);
  double mean = 0;
  for (double t : sc.rank_compute_s) mean += t / double(sc.rank_compute_s.size());
  const auto slow = std::max_element(sc.rank_compute_s.begin(), sc.rank_compute_s.end());
  if (*slow > 1.1 * mean)
    note += strf(" | rank %d slow (+%.0f%%)", int(slow - sc.rank_compute_s.begin()), 100.0 * (*slow / mean - 1));
  return note;
}

}  // namespace

TrainLoop::TrainLoop(const TrainPlan& plan, const Dataset& ds, RunFolder& run, TrainProgress& progress,
                     double peak_gflops)
    : plan_(plan),
      cfg_(plan.cfg),
      tok_(*ds.tokenizer),
      run_(run),
      progress_(progress),
      peak_gflops_(peak_gflops),
      owners_(comm_.size() > 1 ? tensor_owners(param_specs(plan.model), comm_.size()) : std::vector<int>{}),
      model_(plan.model, *plan.kernels, std::max(plan.B, plan.eval_B), plan.T, plan.prec),
      // Over several ranks the optimizer is sharded: each rank updates, and keeps the state of,
      // the tensors it owns.
      opt_(plan.optim, init_model(model_, plan.cfg.seed), *plan.kernels, owned_by(owners_, comm_.rank())),
      loader_(ds.train, plan.B, plan.T, plan.cfg.seed, 0, 1, plan.pack),
      val_(ds.val, plan.eval_B, plan.T, uint64_t(plan.cfg.eval_tokens)),
      inputs_(size_t(int64_t(plan.B) * plan.T)),
      targets_(size_t(int64_t(plan.B) * plan.T)),
      budget_(plan.budget_s) {}

void TrainLoop::restore(const CheckpointData& ck) {
  if (!ck.state.tokenizer_id.empty() && ck.state.tokenizer_id != to_hex(tok_.identity()))
    fail("%s: written with another tokenizer than the run's data has", ck.path.c_str());
  if (owners_.empty()) {
    restore_checkpoint(ck, model_.params(), opt_.m().data(), opt_.v().data());
  } else {
    // Every rank has the whole checkpoint and keeps its own tensors' state. The whole m passes
    // through the gradient arena, which is free between steps (the next step's first
    // micro-batch overwrites it).
    Buffer<float> v(model_.params().numel());
    restore_checkpoint(ck, model_.params(), model_.grads().data.data(), v.data());
    opt_.import_state(model_.params(), model_.grads().data.data(), v.data());
  }
  const TrainState& s = ck.state;
  step_ = s.step;
  tokens_ = s.tokens >= 0 ? s.tokens : s.step * plan_.step_tokens;
  opt_.set_steps_taken(s.optimizer_steps);
  opt_.set_lr_scale(s.lr_scale);
  try {
    loader_.set_state(s.loader);
  } catch (const Error& e) {
    fail("%s: %s", ck.path.c_str(), e.what());
  }
  budget_.restore(s.train_seconds, s.recent_step_seconds);
  eval_seconds_ = s.eval_seconds;
  save_seconds_ = s.save_seconds;
  data_seconds_ = s.data_seconds;
  last_eval_at_ = s.last_eval_at;
  last_save_at_ = s.last_save_at;
  core_seconds_ = s.core_seconds;
  last_core_at_ = s.last_core_at;
  rollbacks_ = s.rollbacks;
  last_saved_step_ = step_;
}

void TrainLoop::resume_from(const CheckpointData& ck) {
  restore(ck);
  progress_.print(strf("resumed from %s: step %lld, %s of training done", ck.path.c_str(), (long long)step_,
                       format_duration(budget_.used()).c_str()));
}

TrainState TrainLoop::state() const {
  TrainState s;
  s.step = step_;
  s.optimizer_steps = opt_.steps_taken();
  s.tokens = tokens_;
  s.lr_scale = opt_.lr_scale();
  s.loader = loader_.state();
  s.train_seconds = budget_.used();
  s.recent_step_seconds = budget_.recent();
  s.eval_seconds = eval_seconds_;
  s.save_seconds = save_seconds_;
  s.data_seconds = data_seconds_;
  s.last_eval_at = last_eval_at_;
  s.last_save_at = last_save_at_;
  s.core_seconds = core_seconds_;
  s.last_core_at = last_core_at_;
  s.rollbacks = rollbacks_;
  s.metrics_lines = run_.metrics_lines();
  s.run_id = run_.run_id();
  s.tokenizer_id = to_hex(tok_.identity());
  return s;
}

void TrainLoop::save() {
  // Checkpoints hold the whole optimizer state: rank 0 collects each tensor's from its owner,
  // m in the gradient arena (free between steps), v in a buffer for the write.
  const float* m = opt_.m().data();
  const float* v = opt_.v().data();
  Buffer<float> v_all;
  if (!owners_.empty()) {
    if (run_.writer()) v_all.resize(model_.params().numel());
    gather_state(comm_, model_.params(), opt_, owners_, model_.grads().data.data(), v_all.data());
    m = model_.grads().data.data(), v = v_all.data();
  }
  if (!run_.writer()) {  // rank 0 writes the checkpoint for every rank
    last_saved_step_ = step_;
    return;
  }
  profile::Zone zone(profile::kCheckpoint);
  const auto ts = Clock::now();
  last_save_at_ = budget_.used();
  const std::string path = run_.checkpoint_path(step_);
  write_checkpoint(path, plan_.model, cfg_.to_json(), state(), model_.params(), m, v);
  run_.prune_checkpoints(cfg_.keep_checkpoints);
  last_saved_step_ = step_;
  save_seconds_ += since(ts);
  progress_.print(strf("step %lld | checkpoint %s (%.1fs, not charged)", (long long)step_, path.c_str(), since(ts)));
}

void TrainLoop::evaluate() {
  profile::Zone zone(profile::kEval);
  // Over several ranks each evaluates a contiguous share of the batches; the per-batch sums are
  // then added in batch order, so val_bpb has one process's bits whatever the rank count.
  const auto t0 = Clock::now();
  const size_t batches = val_.num_batches(), r = size_t(comm_.rank()), n = size_t(comm_.size());
  std::vector<double> sums(3 * batches, 0.0);
  bpb_batch_sums(model_, val_, tok_, plan_.eval_B, plan_.T, r * batches / n, (r + 1) * batches / n, sums.data());
  if (n > 1) comm_.allreduce_sum(sums.data(), sums.size());  // each entry is one rank's, the rest add 0
  last_eval_ = bpb_from_batch_sums(sums.data(), batches);
  last_eval_.seconds = since(t0);
  if (comm_.rank() != 0) return;
  eval_seconds_ += last_eval_.seconds;
  last_eval_at_ = budget_.used();
  run_.log_metric({{"type", "eval"}, {"step", step_}, {"train_seconds", budget_.used()}, {"val_bpb", last_eval_.bpb},
                   {"val_loss", last_eval_.loss}, {"val_targets", last_eval_.targets},
                   {"eval_seconds", last_eval_.seconds}, {"eval_ranks", n}});
  progress_.print(strf("step %lld | val_bpb %.4f | val_loss %.4f | %llu targets in %.1fs (not charged)",
                       (long long)step_, last_eval_.bpb, last_eval_.loss, (unsigned long long)last_eval_.targets,
                       last_eval_.seconds));
}

void TrainLoop::evaluate_core() {
  if (!core_) return;
  profile::Zone zone(profile::kEval);
  const auto t0 = Clock::now();
  last_core_at_ = budget_.used();
  last_core_step_ = step_;
  try {
    last_core_ = core_->evaluate(model_, tok_, plan_.T, [&](int64_t done, int64_t total) {
      progress_.update(
          strf("step %lld | CORE: %lld / %lld items", (long long)step_, (long long)done, (long long)total));
    });
    run_.log_metric(core_metric_json(*last_core_, step_, budget_.used()));
    progress_.print(core_line(*last_core_, step_));
  } catch (const std::exception& e) {
    core_error_ = strf("step %lld: %s", (long long)step_, e.what());
    core_ = nullptr;
    last_core_.reset();
    progress_.finish();
    warn_line("CORE evaluation failed at " + core_error_ + "; no more CORE evaluations in this run");
  }
  core_seconds_ += since(t0);
}

void TrainLoop::on_non_finite(const std::string& what) {
  const auto ckpts = run_.checkpoints();
  const std::string last_good = ckpts.empty() ? "none" : ckpts.front();
  // Rank 0 sees the checkpoints; every rank follows its choice.
  int32_t roll = cfg_.on_nan == "rollback" && !ckpts.empty() && rollbacks_ < 3;
  if (comm_.size() > 1) comm_.broadcast(&roll, sizeof roll, 0);
  if (roll) {
    // The rollback count and the halved scale outlive the restore (the checkpoint is older).
    const double scale = opt_.lr_scale();
    const int64_t bad_step = step_, done = rollbacks_;
    restore(shared_checkpoint(comm_, run_));
    rollbacks_ = done + 1;
    opt_.set_lr_scale(scale * 0.5);
    progress_.print(strf("step %lld: %s; rolled back to step %lld with learning rates x%.3g", (long long)bad_step,
                         what.c_str(), (long long)step_, opt_.lr_scale()));
    return;
  }
  fail("step %lld: %s; the last good checkpoint is %s%s", (long long)step_, what.c_str(), last_good.c_str(),
       cfg_.on_nan == "rollback" ? " (no rollback left)" : " (--on-nan rollback retries from it)");
}

void TrainLoop::stop(int sig) {
  save_if_new();
  progress_.finish();
  throw Interrupted{sig, strf("stopped by %s at step %lld; resume with: nanotrain train --resume %s",
                              sig == 2 ? "SIGINT" : "SIGTERM", (long long)step_, run_.dir().c_str())};
}

bool TrainLoop::step(double progress) {
  const double lrm = cfg_.schedule.multiplier(progress);
  const auto t0 = Clock::now();
  const double busy0 = comm_.busy_seconds();
  std::optional<profile::Zone> step_zone(std::in_place, profile::kStep);
  double loss = 0;
  const int64_t accum = cfg_.schedule.micro_batches(progress, plan_.accum);
  const int64_t ranks = comm_.size(), first = comm_.rank() * accum / ranks, end = first + accum / ranks;
  if (accum % ranks != 0)
    fail("step %lld: %lld micro-batches do not divide among %lld ranks", (long long)step_, (long long)accum,
         (long long)ranks);
  OwnerSum grad_sum(comm_, model_.grads(), owners_);
  for (int64_t a = 0; a < accum; ++a) {
    const auto td = Clock::now();
    {
      profile::Zone zone(profile::kData);
      loader_.next(inputs_.data(), targets_.data());
    }
    data_seconds_ += since(td);
    // Every rank reads every micro-batch, so that the loader's position is one process's; it
    // computes only its own share [first, end).
    if (a < first || a >= end) continue;
    // The last micro-batch's backward starts each layer's gradient sum as it finishes the layer.
    const LayerDoneHook hook(model_, ranks > 1 && a == end - 1 ? &grad_sum : nullptr);
    // The first micro-batch overwrites the gradients, the rest add to them.
    loss += model_.forward_backward(inputs_.data(), targets_.data(), plan_.B, plan_.T, 1.0 / double(accum), a > first) /
            double(accum);
  }
  const double compute_s = since(t0) - (comm_.busy_seconds() - busy0);  // less the sums' polls
  StepComm sc;
  if (ranks > 1) sum_across_ranks(&loss, sc, compute_s, grad_sum);
  double grad_norm = 0;
  const std::string bad = first_bad_gradient(*plan_.kernels, model_.exec(), model_.grads(), &grad_norm, comm_, owners_);
  if (!std::isfinite(loss) || !bad.empty()) {
    on_non_finite(!std::isfinite(loss) ? strf("the loss is not finite (%g)", loss)
                                       : "the gradient of " + bad + " is not finite");
    return false;
  }
  {
    profile::Zone zone(profile::kOptimizer);
    opt_.step(model_.params(), model_.grads(), lrm, progress, cfg_.schedule.warmdown_done(progress));
    if (!owners_.empty()) share_from_owners(comm_, model_.params(), model_.params().data.data(), owners_);
  }
  step_zone.reset();
  const double dt = since(t0);
  budget_.charge(dt);
  ++step_;
  const int64_t step_tokens = accum * plan_.B * plan_.T;
  tokens_ += step_tokens;
  last_loss_ = loss;
  sc.seconds = comm_.busy_seconds() - busy0;
  last_comm_ = sc;
  rank_tokens_ += step_tokens / ranks, rank_train_s_ += dt, rank_compute_s_ += compute_s, rank_comm_s_ += sc.seconds;
  log_step(loss, grad_norm, lrm, dt, step_tokens);
  return true;
}

void TrainLoop::sum_across_ranks(double* loss, StepComm& sc, double compute_seconds, OwnerSum& grad_sum) {
  grad_sum.finish();
  // The loss, and each rank's compute time in a slot of its own (the others add zeros).
  std::vector<double> sums(1 + size_t(comm_.size()), 0.0);
  sums[0] = *loss;
  sums[1 + size_t(comm_.rank())] = compute_seconds;
  comm_.allreduce_sum(sums.data(), sums.size());
  *loss = sums[0];
  sc.rank_compute_s.assign(sums.begin() + 1, sums.end());
}

nlohmann::json TrainLoop::rank_report() {
  const size_t n = size_t(comm_.size()), r = size_t(comm_.rank());
  constexpr size_t kFields = 5;
  std::vector<double> all(kFields * n, 0.0);
  double* mine = all.data() + kFields * r;
  mine[0] = double(rank_tokens_), mine[1] = rank_train_s_, mine[2] = rank_compute_s_, mine[3] = rank_comm_s_;
  mine[4] = double(opt_.state_bytes());
  if (n > 1) comm_.allreduce_sum(all.data(), all.size());
  const std::vector<std::string> hosts = dist::rank_hosts(comm_);  // each rank's machine, as it names itself
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    const double* f = all.data() + kFields * i;
    ranks.push_back({{"rank", i}, {"host", hosts[i]}, {"tokens", int64_t(f[0])}, {"train_seconds", f[1]},
                     {"tokens_per_second", f[1] > 0 ? f[0] / f[1] : 0.0}, {"compute_seconds", f[2]},
                     {"compute_tokens_per_second", f[2] > 0 ? f[0] / f[2] : 0.0}, {"comm_seconds", f[3]},
                     {"comm_share", f[1] > 0 ? f[3] / f[1] : 0.0}, {"optimizer_state_bytes", int64_t(f[4])}});
  }
  return ranks;
}

void TrainLoop::log_step(double loss, double grad_norm, double lrm, double dt, int64_t step_tokens) {
  const int64_t steps = cfg_.steps;
  const double tps = double(step_tokens) / dt;
  const double mfu = tps * plan_.flops_per_token / (peak_gflops_ * 1e9);
  nlohmann::json metric = {{"type", "step"}, {"step", step_}, {"loss", loss}, {"grad_norm", grad_norm},
                           {"lr_mult", lrm}, {"train_seconds", budget_.used()}, {"step_seconds", dt},
                           {"tokens", tokens_}, {"tokens_per_second", tps}, {"mfu", mfu}};
  if (comm_.size() > 1)
    metric["comm_seconds"] = last_comm_.seconds, metric["rank_compute_seconds"] = last_comm_.rank_compute_s;
  run_.log_metric(metric);
  const std::string left = steps > 0 ? strf("%lld steps left", (long long)(steps - step_))
                                     : format_duration(std::max(0.0, plan_.budget_s - budget_.used())) + " left";
  progress_.update(strf("%s / %s | step %lld | loss %.4f | lr x%.3f | %.0f tok/s | MFU %.1f%%%s | %s",
                        format_duration(budget_.used()).c_str(),
                        steps > 0 ? strf("%lld steps", (long long)steps).c_str() : format_duration(plan_.budget_s).c_str(),
                        (long long)step_, loss, lrm, tps, 100 * mfu, comm_note(last_comm_, dt).c_str(), left.c_str()),
                   step_ == 1);
}

void TrainLoop::run() {
  signals_.emplace();
  if (cfg_.profile) profile::enable(true);
  for (;;) {
    // Rank 0's clock and signals decide for every rank, so that all stop at the same step.
    StepDecision d;
    if (comm_.rank() == 0) {
      d.stop_signal = StopSignals::requested();
      d.finished = cfg_.steps > 0 ? step_ >= cfg_.steps : (step_ > 0 && budget_.next_step_would_overrun());
      d.evaluate = plan_.eval_every.due(step_, budget_.used(), last_eval_at_) && last_eval_at_ < budget_.used();
      d.core = core_ && plan_.core_every.due(step_, budget_.used(), last_core_at_) && last_core_at_ < budget_.used();
      d.save = plan_.save_every.due(step_, budget_.used(), last_save_at_);
      d.progress = cfg_.steps > 0 ? double(step_) / double(cfg_.steps) : budget_.progress();
    }
    share_decision(comm_, d);
    if (d.stop_signal) stop(d.stop_signal);
    if (d.finished) break;
    if (d.evaluate) evaluate();
    if (d.core) evaluate_core();
    if (d.save) save_if_new();
    step(d.progress);
  }
  progress_.finish();
}

}  // namespace nt
