// SPDX-License-Identifier: MIT
// `nanotrain eval core`: the CORE score of a run's model (or a checkpoint) on an evaluation
// bundle in the DCLM layout: a table per task, CORE, and optionally the whole result as JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/field_options.h"
#include "core/check.h"
#include "core/files.h"
#include "core/sha256.h"
#include "core/system.h"
#include "data/progress.h"
#include "eval/core/core_eval.h"
#include "eval/core/scorer_fast.h"
#include "eval/core/scorer_plain.h"
#include "kernels/backend.h"
#include "model/weights_io.h"
#include "train/checkpoint.h"
#include "train/run_folder.h"
#include "train/train_plan.h"

namespace nt::cli {

namespace {

struct EvalCoreFlags {
  std::string run_dir, checkpoint, bundle, tasks, json_path, device = "cpu", scorer = "fast";
  int64_t max_per_task = 0;
  int threads = 0;
  bool skip_bad = false;

  template <class V>
  void for_each_field(V&& v) {
    v(run_dir, {.flag = "--run-dir", .help = "Run folder written by nanotrain train (its final weights)"});
    v(checkpoint, {.flag = "--checkpoint",
                   .help = "A weights file or training checkpoint inside a run folder (instead of --run-dir)"});
    v(bundle, {.flag = "--bundle", .help = "Evaluation bundle: core.yaml, eval_meta_data.csv, eval_data/",
               .required = true});
    v(max_per_task, {.flag = "--max-per-task", .help = "Items per task after the seeded shuffle (0 = all)",
                     .show_default = true, .min = 0, .error = "must be >= 0"});
    v(tasks, {.flag = "--tasks", .help = "Comma-separated task labels to run (default: all)"});
    v(skip_bad, {.flag = "--skip-bad", .help = "Report and leave out bad items instead of stopping"});
    v(json_path, {.flag = "--json", .help = "Also write every figure to this JSON file"});
    v(threads, {.flag = "--threads", .help = "Threads (0 = all cores)", .show_default = true, .min = 0,
                .error = "must be >= 0"});
    v(device, {.flag = "--device", .help = "Backend: cpu, ref", .show_default = true});
    v(scorer, {.flag = "--scorer", .help = "plain: every candidate run whole; fast: shared prefixes",
               .show_default = true, .choices = "plain fast"});
  }
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    const size_t b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(part.substr(b, e - b + 1));
  }
  return out;
}

// The model to evaluate: shape, tokenizer and weights, from a run folder or a file in one.
struct EvalModel {
  TrainedRun run;
  std::string weights_file, run_id;
  bool from_checkpoint = false;
};

std::string config_string(const std::string& dir, const char* key) {
  const std::string path = (std::filesystem::path(dir) / kConfigFile).string();
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception&) {
    fail("%s: not valid JSON", path.c_str());
  }
  return cfg.contains(key) && cfg[key].is_string() ? cfg[key].get<std::string>() : "";
}

EvalModel open_model(const EvalCoreFlags& o) {
  namespace fs = std::filesystem;
  if (o.run_dir.empty() == o.checkpoint.empty()) fail("--run-dir / --checkpoint: give exactly one of them");
  EvalModel m;
  if (!o.run_dir.empty()) {
    m.run = open_trained_run(o.run_dir);
    m.weights_file = m.run.weights_path;
  } else {
    // The run folder holds the tokenizer: the file's folder, or the one above checkpoints/.
    fs::path dir = fs::path(o.checkpoint).parent_path();
    if (dir.filename() == "checkpoints") dir = dir.parent_path();
    if (dir.empty()) dir = ".";
    if (!fs::exists(o.checkpoint)) fail("--checkpoint %s: not found", o.checkpoint.c_str());
    const std::string spec = config_string(dir.string(), "tokenizer");
    if (spec.empty()) fail("%s: has no \"tokenizer\" entry", (dir / kConfigFile).string().c_str());
    m.run.dir = dir.string();
    m.run.tokenizer = load_tokenizer_in_dir(dir.string(), spec);
    m.weights_file = o.checkpoint;
    m.from_checkpoint = fs::path(o.checkpoint).parent_path().filename() == "checkpoints";
    m.run.model = m.from_checkpoint ? read_checkpoint(o.checkpoint).model : read_weights_config(o.checkpoint);
    if (uint32_t(m.run.model.vocab_size) < m.run.tokenizer->vocab_size())
      fail("%s: model vocabulary %d is smaller than the tokenizer's %u", o.checkpoint.c_str(), m.run.model.vocab_size,
           m.run.tokenizer->vocab_size());
  }
  m.run_id = config_string(m.run.dir, "run_id");
  return m;
}

void load_model_weights(const EvalModel& m, Gpt& model) {
  if (!m.from_checkpoint) return load_weights(m.weights_file, m.run.model, model.params());
  const CheckpointData ck = read_checkpoint(m.weights_file);
  std::vector<float> mom(model.params().data.size()), var(model.params().data.size());
  restore_checkpoint(ck, model.params(), mom.data(), var.data());
}

void print_table(const CoreResult& r) {
  std::printf("%-34s %-17s %5s %7s %9s %9s %9s\n", "task", "type", "shots", "items", "accuracy", "centered",
              "baseline");
  // A centered 0 can come out as -1e-17 (0.01 * b is inexact); it shows as 0, not -0.0000.
  const auto shown = [](double x) { return std::fabs(x) < 5e-9 ? 0.0 : x; };
  for (const auto& t : r.tasks)
    std::printf("%-34s %-17s %5d %7lld %9.4f %9.4f %8.1f%%\n", t.label.c_str(), core_task_type_name(t.type), t.shots,
                (long long)t.items, t.accuracy, shown(t.centered), t.baseline);
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  std::printf("CORE %.6f over %zu task(s) | %lld items in %.1fs, %.1f items/s, %.0f tokens/s\n", r.core,
              r.tasks.size(), (long long)r.examples, r.seconds, double(r.examples) / secs,
              double(r.stats.tokens_run) / secs);
  if (r.stats.flops_plain > 0 && r.stats.flops_run < r.stats.flops_plain)
    std::printf("prefix sharing: %.1f%% of the plain forward FLOPs saved\n",
                100.0 * (1.0 - r.stats.flops_run / r.stats.flops_plain));
}

nlohmann::json result_json(const CoreResult& r, const CoreBundle& b, const EvalModel& m, const EvalCoreFlags& o) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : r.tasks) {
    nlohmann::json dec = nlohmann::json::array();
    for (const auto& d : t.decisions) dec.push_back({{"line", d.line}, {"pred", d.predicted}, {"correct", d.correct}});
    tasks.push_back({{"label", t.label}, {"type", core_task_type_name(t.type)}, {"shots", t.shots},
                     {"shots_requested", t.shots_requested}, {"items", t.items}, {"correct", t.correct},
                     {"skipped", t.skipped}, {"accuracy", t.accuracy}, {"centered", t.centered},
                     {"baseline", t.baseline}, {"seconds", t.seconds}, {"tokens_run", t.stats.tokens_run},
                     {"flops_run", t.stats.flops_run}, {"flops_plain", t.stats.flops_plain}, {"decisions", dec}});
  }
  const double secs = r.seconds > 0 ? r.seconds : 1e-9;
  return {{"core", r.core},
          {"tasks", tasks},
          {"bundle", {{"dir", b.dir}, {"sha256", b.checksum}}},
          {"model", {{"run_dir", m.run.dir}, {"run_id", m.run_id}, {"weights", m.weights_file},
                     {"weights_sha256", to_hex(sha256_file(m.weights_file))}, {"seq_len", m.run.model.seq_len}}},
          {"max_per_task", o.max_per_task},
          {"scorer", o.scorer},
          {"seconds", r.seconds},
          {"items", r.examples},
          {"items_per_second", double(r.examples) / secs},
          {"tokens_run", r.stats.tokens_run},
          {"tokens_per_second", double(r.stats.tokens_run) / secs},
          {"flops_run", r.stats.flops_run},
          {"flops_plain", r.stats.flops_plain}};
}

void run_eval_core(const EvalCoreFlags& o) {
  validate_fields(o);
  setup_threads(o.threads);
  const EvalModel m = open_model(o);
  const auto warn = [](const std::string& s) { warn_line(s); };
  BundleOptions bo;
  bo.tasks = split_commas(o.tasks);
  bo.skip_bad = o.skip_bad;
  bo.on_skip = warn;
  const CoreBundle bundle = read_bundle(o.bundle, bo);
  // The JSON's temporary file is made now, so that an unwritable destination fails before the work.
  std::optional<AtomicFile> json_out;
  if (!o.json_path.empty()) json_out.emplace(o.json_path);
  const int T = m.run.model.seq_len;
  check_inference_memory(m.run.model, 1, T, "eval core");
  Gpt model(m.run.model, backend_for_device(o.device).kernels(), 1, T);
  load_model_weights(m, model);
  std::unique_ptr<CoreScorer> scorer;
  if (o.scorer == "fast") scorer = std::make_unique<FastScorer>(model);
  else scorer = std::make_unique<PlainScorer>(model);
  CoreEvalOptions eo;
  eo.max_per_task = o.max_per_task;
  eo.skip_bad = o.skip_bad;
  eo.on_skip = warn;
  uint64_t total = 0;
  for (const auto& t : bundle.tasks)
    total += o.max_per_task > 0 ? std::min<uint64_t>(t.items.size(), uint64_t(o.max_per_task)) : t.items.size();
  ProgressLine progress("CORE items", total, "");
  int64_t shown = 0;
  eo.on_progress = [&](const std::string&, int64_t, int64_t, int64_t all_done, int64_t) {
    progress.add(uint64_t(all_done - shown));
    shown = all_done;
  };
  const CoreResult r = evaluate_core(bundle, *m.run.tokenizer, T, *scorer, eo);
  progress.finish();
  for (const auto& t : r.tasks)
    if (t.shots < t.shots_requested)
      warn_line(strf("task '%s': %lld items, so %d shots each instead of %d", t.label.c_str(),
                     (long long)(t.items + t.skipped), t.shots, t.shots_requested));
  print_table(r);
  if (json_out) {
    json_out->write(result_json(r, bundle, m, o).dump(1) + "\n");
    json_out->commit();
  }
}

}  // namespace

void add_eval_core_command(CLI::App& eval) {
  auto o = std::make_shared<EvalCoreFlags>();
  auto* c = eval.add_subcommand("core", "CORE score (DCLM in-context-learning tasks) of a model on an eval bundle");
  add_field_options(c, *o);
  c->callback([o] { run_eval_core(*o); });
}

}  // namespace nt::cli
