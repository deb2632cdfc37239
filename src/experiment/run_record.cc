// SPDX-License-Identifier: MIT
#include "experiment/run_record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/check.h"
#include "core/files.h"
#include "experiment/settings.h"
#include "model/config.h"

namespace nt::experiment {

namespace fs = std::filesystem;

namespace {

// (device, inode) of every file a process holds a lock on, from /proc/locks: asking the kernel
// leaves the locks alone (taking one to test it could make a run that starts at that moment fail).
using LockTable = std::set<std::pair<dev_t, ino_t>>;

LockTable held_locks() {
  LockTable t;
  std::ifstream in("/proc/locks");
  for (std::string line; std::getline(in, line);) {
    unsigned major = 0, minor = 0;
    unsigned long inode = 0;
    int pid = 0;
    char kind[16] = {0};
    if (line.find("->") != std::string::npos) continue;  // a waiter, not a holder
    if (std::sscanf(line.c_str(), "%*s %15s %*s %*s %d %x:%x:%lu", kind, &pid, &major, &minor, &inode) == 5)
      t.insert({makedev(major, minor), ino_t(inode)});
  }
  return t;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A finite number at j[key], or NaN.
double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return NAN;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : NAN;
}

// CORE as a summary may hold it: a number, or an object with a "core" number.
double core_score(const nlohmann::json& summary) {
  const auto it = summary.find("core");
  if (it == summary.end()) return NAN;
  if (it->is_number()) return it->get<double>();
  if (it->is_object()) return number(*it, "core");
  return NAN;
}

void read_summary(RunRecord& r, const nlohmann::json& s) {
  r.val_bpb = number(s, "val_bpb");
  r.core = core_score(s);
  r.final_loss = number(s, "final_train_loss");
  r.train_seconds = s.value("train_seconds", 0.0);
  r.tokens_per_second = s.value("tokens_per_second", 0.0);
  r.mfu = s.value("mfu", 0.0);
  r.tokens = s.value("tokens_trained", int64_t(0));
  r.steps = s.value("steps", int64_t(0));
  r.params = s.value("params_total", int64_t(0));
}

// One metrics line's figures into the record (the later lines overwrite the earlier ones).
void take_metric(RunRecord& r, const nlohmann::json& j, bool curves) {
  if (!j.is_object()) return;
  const std::string type = j.value("type", "");
  const double secs = number(j, "train_seconds");
  if (type == "step") {
    r.steps = j.value("step", r.steps);
    r.tokens = j.value("tokens", r.tokens);
    r.train_seconds = std::isfinite(secs) ? secs : r.train_seconds;
    r.final_loss = number(j, "loss");
    if (std::isfinite(number(j, "mfu"))) r.mfu = number(j, "mfu");
    r.tokens_per_second = r.train_seconds > 0 ? double(r.tokens) / r.train_seconds : 0;
    if (curves && std::isfinite(secs) && std::isfinite(r.final_loss))
      r.loss.push_back({secs, double(r.tokens), r.final_loss});
  } else if (type == "eval") {
    const double bpb = number(j, "val_bpb");
    if (curves && std::isfinite(secs) && std::isfinite(bpb)) r.val_bpb_curve.push_back({secs, double(r.tokens), bpb});
    if (std::isfinite(bpb)) r.val_bpb = bpb;
  }
}

// metrics.jsonl: all of it for curves, else its last 64 KiB (enough for the last step and eval).
void read_metrics(RunRecord& r, bool curves, bool figures) {
  const std::string path = (fs::path(r.dir) / "metrics.jsonl").string();
  std::string text;
  if (curves) {
    if (!exists(path)) return;
    try {
      text = read_file(path);
    } catch (const Error&) {
      return;
    }
  } else {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      const off_t n = std::min<off_t>(st.st_size, 64 << 10);
      text.resize(size_t(n));
      const ssize_t got = ::pread(fd, text.data(), size_t(n), st.st_size - n);
      text.resize(got > 0 ? size_t(got) : 0);
    }
    ::close(fd);
  }
  RunRecord scratch;  // a finished run keeps its summary's figures; only the curves are taken
  RunRecord& into = figures ? r : scratch;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    take_metric(into, nlohmann::json::parse(line, nullptr, false), curves);
  }
  if (!figures) r.loss = std::move(scratch.loss), r.val_bpb_curve = std::move(scratch.val_bpb_curve);
}

nlohmann::json read_json(const std::string& path, std::string& error) {
  try {
    nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (!j.is_object()) error = path + ": not a JSON object";
    return j;
  } catch (const nlohmann::json::exception&) {
    error = path + ": not valid JSON";
  } catch (const Error& e) {
    error = e.what();
  }
  return nlohmann::json::object();
}

bool lock_is_held(const std::string& dir, const LockTable& locks) {
  struct stat st {};
  if (::stat((fs::path(dir) / ".lock").c_str(), &st) != 0) return false;
  return locks.count({st.st_dev, st.st_ino}) > 0;
}

RunRecord load_one(const std::string& dir, bool curves, const LockTable& locks) {
  RunRecord r;
  r.dir = dir;
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::string summary_path = (fs::path(dir) / "summary.json").string();
  nlohmann::json config = nlohmann::json::object();
  if (exists(config_path)) config = read_json(config_path, r.error);
  r.settings = settings_from_config(config);
  if (config.contains("model")) {
    try {
      r.params = count_params(ModelConfig::from_json(config["model"]));
    } catch (const std::exception&) {
    }
  }
  const bool finished = exists(summary_path);
  if (finished && r.error.empty()) read_summary(r, read_json(summary_path, r.error));
  // CORE measured after training (`nanotrain eval core --json RUN/core.json`) counts too.
  const std::string core_path = (fs::path(dir) / "core.json").string();
  if (std::isnan(r.core) && exists(core_path)) {
    std::string ignored;
    r.core = core_score(read_json(core_path, ignored));
  }
  if (!r.error.empty()) {
    r.state = RunState::kBroken;
    return r;
  }
  if (finished)
    r.state = RunState::kDone;
  else if (lock_is_held(dir, locks))
    r.state = RunState::kRunning;
  else if (exists((fs::path(dir) / "checkpoints").string()) && !fs::is_empty(fs::path(dir) / "checkpoints"))
    r.state = RunState::kInterrupted;
  else
    r.state = RunState::kStarted;
  if (curves || !finished) read_metrics(r, curves, /*figures=*/!finished);
  return r;
}

void search(const fs::path& root, const fs::path& dir, int depth,
            std::vector<std::pair<std::string, std::string>>& out) {
  std::vector<fs::path> children;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && !e.is_symlink(ec)) children.push_back(e.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& c : children) {
    if (is_run_folder(c.string()))
      out.push_back({c.string(), fs::relative(c, root, ec).string()});
    else if (depth > 1)
      search(root, c, depth - 1, out);
  }
}

}  // namespace

const char* run_state_name(RunState s) {
  switch (s) {
    case RunState::kDone: return "done";
    case RunState::kRunning: return "running";
    case RunState::kInterrupted: return "interrupted";
    case RunState::kStarted: return "started";
    case RunState::kBroken: return "broken";
  }
  return "broken";
}

bool is_run_folder(const std::string& dir) {
  const fs::path d(dir);
  return exists((d / "config.json").string()) || exists((d / "summary.json").string()) ||
         exists((d / "checkpoints").string());
}

RunRecord load_run(const std::string& dir, bool curves) {
  RunRecord r = load_one(dir, curves, held_locks());
  r.name = dir;
  return r;
}

std::vector<RunRecord> load_runs(const std::vector<std::string>& paths, bool curves) {
  std::vector<std::pair<std::string, std::string>> found;  // (dir, name)
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) fail("%s: no such folder", p.c_str());
    if (is_run_folder(p)) {
      std::string name = p;
      while (name.size() > 1 && name.back() == '/') name.pop_back();
      found.push_back({p, name});
    } else {
      search(p, p, 3, found);
    }
  }
  const LockTable locks = held_locks();
  std::vector<RunRecord> out;
  out.reserve(found.size());
  for (const auto& [dir, name] : found) {
    out.push_back(load_one(dir, curves, locks));
    out.back().name = name;
  }
  return out;
}

}  // namespace nt::experiment
