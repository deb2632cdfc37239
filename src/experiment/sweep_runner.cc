// SPDX-License-Identifier: MIT
#include "experiment/sweep_runner.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/check.h"
#include "core/files.h"
#include "core/system.h"
#include "experiment/auto_preset.h"
#include "train/train_plan.h"
#include "train/trainer.h"

namespace nt::experiment {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

bool has_file(const std::string& dir, const char* name) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / name, ec);
}

bool has_checkpoints(const std::string& dir) {
  std::error_code ec;
  const fs::path c = fs::path(dir) / "checkpoints";
  return fs::is_directory(c, ec) && !fs::is_empty(c, ec);
}

// Whether config.json in dir records the same training as cfg ("" when it does, else why not).
std::string config_mismatch(const std::string& dir, const TrainConfig& cfg) {
  try {
    const nlohmann::json config = nlohmann::json::parse(read_file((fs::path(dir) / "config.json").string()));
    if (!config.contains("flags")) return "its config.json has no flags";
    if (run_identity(TrainConfig::from_json(config["flags"])) != run_identity(cfg))
      return "it holds a run with other settings than the plan's";
    return "";
  } catch (const std::exception& e) {
    return std::string("its config.json cannot be read: ") + e.what();
  }
}

double summary_bpb(const std::string& dir) {
  try {
    const nlohmann::json s = nlohmann::json::parse(read_file((fs::path(dir) / "summary.json").string()));
    return s.value("val_bpb", NAN);
  } catch (const std::exception&) {
    return NAN;
  }
}

// The MFU's peak of each (device, dtype), measured once per sweep process (0.15 s each) when the
// first run that needs it starts.
class Peaks {
 public:
  void give(TrainConfig& cfg, SweepStatus& status) {
    if (cfg.peak_gflops > 0) {
      if (!given_) status.set_peak(cfg.peak_gflops, "--peak-gflops");
      given_ = true;
      return;
    }
    const std::string key = cfg.device + "/" + cfg.dtype;
    if (!peaks_.count(key)) {
      TrainConfig probe = cfg;  // the peak depends on the device and precision only
      if (probe.shape.preset == "auto") probe.shape.preset = "cpu";
      const TrainPlan p = plan_settings(probe);
      const ComputePeak m = p.backend->measure_peak(p.prec, 0.05, 3);
      peaks_[key] = m.gflops;
      source_ += strf("%s%s %s: %.0f GFLOP/s (%s)", source_.empty() ? "" : "; ", cfg.device.c_str(),
                      precision_name(p.prec), m.gflops, m.unit);
      if (!given_) status.set_peak(peaks_.begin()->second, "measured once for the sweep: " + source_);
    }
    cfg.peak_gflops = peaks_[key];
  }

 private:
  std::map<std::string, double> peaks_;
  std::string source_;
  bool given_ = false;
};

// Decides how run i starts: skipped (done), resumed, started over or new; false when it cannot.
bool prepare(SweepRun& run, RunStatus& st) {
  TrainConfig& cfg = run.cfg;
  const std::string& dir = cfg.run_dir;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    st.how = "new";
    return true;
  }
  const bool finished = has_file(dir, "summary.json");
  if (finished || has_checkpoints(dir) || has_file(dir, "config.json")) {
    const std::string why = config_mismatch(dir, cfg);
    if (!why.empty() && (finished || has_checkpoints(dir))) {
      st.state = "failed", st.error = dir + ": " + why + " (remove it or use another sweep folder)";
      return false;
    }
  }
  if (finished) {
    st.state = "done", st.how = "skipped", st.val_bpb = summary_bpb(dir);
    return false;
  }
  if (has_checkpoints(dir)) {
    cfg.resume = dir;
    st.how = "resumed";
  } else {
    cfg.overwrite = true;  // a run of this sweep that stopped before its first checkpoint
    st.how = "started over";
  }
  return true;
}

void log_line(const SweepOptions& opt, const std::string& s) {
  if (opt.quiet) return;
  std::fprintf(stderr, "%s\n", s.c_str());
  std::fflush(stderr);
}

// --preset auto: the planner's shape and batch for the run's budget, chosen when a run starts
// (not when it resumes: its folder holds the choice), planned once per budget and setting of the
// machine in a sweep.
void plan_if_auto(TrainConfig& cfg, std::map<std::string, PlanCandidate>& planned, const SweepOptions& opt,
                  const std::string& head) {
  if (cfg.shape.preset != "auto" || !cfg.resume.empty()) return;
  const std::string key = strf("%s/%s/%d/%s/%d", cfg.device.c_str(), cfg.dtype.c_str(), cfg.threads,
                               cfg.time_budget.c_str(), cfg.shape.seq_len);
  if (!planned.count(key)) {
    log_line(opt, head + ": --preset auto, timing the planner's shapes for --time-budget " + cfg.time_budget);
    TrainConfig c = cfg;
    const PlanReport r = plan_auto_preset(c, {});
    if (r.machine_was_busy()) log_line(opt, head + ": warning: " + r.busy_note());
    planned.emplace(key, r.chosen());
  }
  apply_plan(cfg, planned.at(key));
  const PlanCandidate& c = planned.at(key);
  log_line(opt, head + strf(": --preset auto chose depth %d, d_model %d, batch %d", c.depth, c.d_model, c.batch_size));
}

}  // namespace

std::string plan_path(const std::string& out) { return (fs::path(out) / "sweep.json").string(); }

nlohmann::json run_identity(const TrainConfig& cfg) {
  TrainConfig c = cfg;
  c.run_dir.clear(), c.peak_gflops = 0;
  TrainConfig defaults;
  copy_fields_if(c, defaults, [](const FieldInfo& f) { return f.resume_may_change; });
  return c.to_json();
}

nlohmann::json sweep_plan_json(const SweepSpec& spec, const std::vector<SweepRun>& runs) {
  nlohmann::json grid = nlohmann::json::array(), variants = nlohmann::json::array(), list = nlohmann::json::array();
  for (const GridAxis& a : spec.grid) grid.push_back({{"key", a.key}, {"values", a.values}});
  for (const Variant& v : spec.variants) variants.push_back({{"name", v.name}, {"args", v.args}});
  for (const SweepRun& r : runs) {
    nlohmann::json g = nlohmann::json::object();
    for (const auto& [k, v] : r.plan.grid) g[k] = v;
    list.push_back({{"name", r.plan.name},
                    {"variant", r.plan.variant},
                    {"grid", g},
                    {"seed", r.cfg.seed},
                    {"args", r.plan.args},
                    {"config", run_identity(r.cfg)}});
  }
  return {{"schema", "nanotrain-sweep/1"},   {"grid", grid}, {"variants", variants}, {"seeds", spec.seeds},
          {"shared_args", spec.shared_args}, {"runs", list}};
}

std::vector<SweepRun> runs_from_plan(const nlohmann::json& plan, const std::string& path) {
  if (!plan.is_object() || plan.value("schema", "") != "nanotrain-sweep/1" || !plan.contains("runs"))
    fail("%s: not a nanotrain sweep plan", path.c_str());
  std::vector<SweepRun> runs;
  try {
    for (const auto& r : plan["runs"]) {
      SweepRun s;
      s.plan.name = r.at("name").get<std::string>();
      s.plan.variant = r.at("variant").get<std::string>();
      s.plan.args = r.at("args").get<std::vector<std::string>>();
      for (auto it = r.at("grid").begin(); it != r.at("grid").end(); ++it) s.plan.grid.push_back({it.key(), *it});
      s.cfg = TrainConfig::from_json(r.at("config"));
      s.plan.seed = s.cfg.seed;
      runs.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("%s: %s", path.c_str(), e.what());
  }
  return runs;
}

namespace {

// Trains one run of the sweep (its status entry i already says running), recording the outcome.
void train_run(SweepRun& run, size_t i, SweepStatus& status, std::map<std::string, PlanCandidate>& planned,
               const SweepOptions& opt, const std::string& head) {
  RunStatus& rs = status.run(i);
  log_line(opt, head + ": " + rs.how);
  const auto t0 = Clock::now();
  try {
    plan_if_auto(run.cfg, planned, opt, head);
    const TrainSummary s = run_training(run.cfg);
    rs.state = "done", rs.val_bpb = s.val_bpb;
  } catch (const Interrupted&) {
    rs.state = "interrupted", rs.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    status.set_state("interrupted");
    status.write();
    throw;
  } catch (const std::exception& e) {
    rs.state = "failed", rs.error = e.what();
  }
  rs.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  log_line(opt, head + ": " +
                    (rs.state == "done" ? strf("done, val_bpb %.4f (%.1f s)", rs.val_bpb, rs.seconds)
                                        : "FAILED: " + rs.error));
  status.write();
}

// The sweep folder's own lock: exclusive for a sweep alone in it, shared by --parallel-hosts ones.
int lock_sweep(const SweepOptions& opt, const std::string& me) {
  std::string holder;
  const int fd = try_lock_file(opt.out, ".sweep.lock", me, &holder, opt.parallel);
  if (fd >= 0) return fd;
  if (opt.parallel)
    fail("%s: in use by a sweep started without --parallel-hosts%s; wait for it to finish or stop it",
         opt.out.c_str(), holder.empty() ? "" : (" (pid " + holder + ")").c_str());
  fail("%s: in use by another nanotrain sweep%s; wait for it to finish or stop it (or start every sweep process "
       "on it with --parallel-hosts)",
       opt.out.c_str(), holder.empty() ? "" : (" (pid " + holder + ")").c_str());
}

// Checks the stored plan against this one, or stores it (under the status lock: two processes
// starting at once store one plan, and the second compares against it).
void store_plan(const std::vector<SweepRun>& runs, const nlohmann::json& plan, const std::string& out) {
  const HeldLock lock(wait_lock_file(out, ".status.lock"));
  const std::string stored = plan_path(out);
  if (fs::exists(stored)) {
    const std::vector<SweepRun> before =
        runs_from_plan(nlohmann::json::parse(read_file(stored), nullptr, false), stored);
    bool same = before.size() == runs.size();
    for (size_t i = 0; same && i < runs.size(); ++i)
      same = before[i].plan.name == runs[i].plan.name && run_identity(before[i].cfg) == run_identity(runs[i].cfg);
    if (!same)
      fail("%s: holds a different sweep; continue it with `nanotrain sweep --out %s` alone, or use another --out",
           stored.c_str(), out.c_str());
  } else {
    write_file_atomic(stored, plan.dump(2) + "\n");
  }
}

}  // namespace

SweepStatus run_sweep(std::vector<SweepRun> runs, const nlohmann::json& plan, const SweepOptions& opt) {
  make_dirs(opt.out);
  const std::string me = strf("%d on %s", int(::getpid()), hostname().c_str());
  const HeldLock sweep_lock(lock_sweep(opt, me));
  store_plan(runs, plan, opt.out);
  const std::string claims = (fs::path(opt.out) / ".claims").string();
  if (opt.parallel) make_dirs(claims);
  std::vector<RunStatus> st;
  for (SweepRun& r : runs) {
    r.cfg.run_dir = (fs::path(opt.out) / r.plan.name).string();
    r.cfg.quiet = r.cfg.quiet || !opt.verbose;
    RunStatus rs;
    rs.name = r.plan.name, rs.dir = r.cfg.run_dir;
    st.push_back(rs);
  }
  SweepStatus status(opt.out, std::move(st), opt.parallel);
  status.write();
  Peaks peaks;
  std::map<std::string, PlanCandidate> planned;
  std::vector<bool> settled(runs.size(), false);  // done, skipped or failed by this process
  // A lone sweep goes through its runs once. Sharing the folder, a process takes each run no other
  // holds; it looks again after running one, for a run a killed process let go of meanwhile.
  for (bool ran = true; ran;) {
    ran = false;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (settled[i]) continue;
      const std::string head = strf("[%zu/%zu] %s", i + 1, runs.size(), runs[i].plan.name.c_str());
      std::string holder;
      const HeldLock claim(opt.parallel ? try_lock_file(claims, (runs[i].plan.name + ".lock").c_str(), me, &holder) : -1);
      if (opt.parallel && claim.fd < 0) continue;  // another process has it
      if (opt.parallel) status.write();          // the others' latest entries
      RunStatus& rs = status.run(i);
      RunStatus fresh;
      fresh.name = rs.name, fresh.dir = rs.dir;
      SweepRun run = runs[i];
      const bool todo = prepare(run, fresh);
      settled[i] = true;
      if (!todo) {
        // A run another process finished keeps that process's entry.
        if (!(fresh.how == "skipped" && rs.state == "done")) status.own(i), rs = fresh;
        log_line(opt, head + ": " + (fresh.state == "done" ? strf("already done, val_bpb %.4f", fresh.val_bpb) : fresh.error));
        status.write();
        continue;
      }
      status.own(i);
      rs = fresh;
      rs.state = "running", rs.worker = me;
      peaks.give(run.cfg, status);
      status.write();
      train_run(run, i, status, planned, opt, head);
      ran = opt.parallel;
    }
  }
  for (size_t i = 0; i < runs.size(); ++i)
    if (!settled[i])
      log_line(opt, strf("[%zu/%zu] %s: ", i + 1, runs.size(), runs[i].plan.name.c_str()) +
                        (status.run(i).worker.empty() ? "held by another sweep process"
                                                      : "running in " + status.run(i).worker));
  status.write();
  status.settle();
  status.write();
  return status;
}

}  // namespace nt::experiment
