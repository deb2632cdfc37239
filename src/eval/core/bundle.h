// SPDX-License-Identifier: MIT
// A CORE evaluation bundle in the layout published with DCLM:
//   core.yaml            icl_tasks: [{label, icl_task_type, dataset_uri, num_fewshot: [k],
//                                     continuation_delimiter (default " ")}, ...]
//   eval_data/<uri>      JSONL, one item per line
//   eval_meta_data.csv   columns "Eval Task" (the label) and "Random baseline" (percent)
// Every problem is an nt::Error of one line naming the file and line; with skip_bad, a bad item
// (one JSONL line) is reported and left out instead.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nt {

enum class CoreTaskType { kMultipleChoice, kSchema, kLanguageModeling };
const char* core_task_type_name(CoreTaskType t);  // the icl_task_type spelling

// One JSONL item. Multiple choice: query, choices, gold. Schema: choices holds the
// context_options, continuation and gold. Language modeling: query holds the context, and
// continuation.
struct CoreItem {
  std::string query, continuation;
  std::vector<std::string> choices;
  int gold = 0;
  int64_t line = 0;  // 1-based line in the task's file, for messages
};

struct CoreTask {
  std::string label, dataset_uri, delimiter = " ";
  std::string path;  // the JSONL file as opened (bundle dir joined with eval_data/<uri>)
  CoreTaskType type = CoreTaskType::kMultipleChoice;
  int shots = 0;                // num_fewshot[0]
  double baseline = 0;          // random baseline, percent
  std::vector<CoreItem> items;  // in file order
};

struct BundleOptions {
  std::vector<std::string> tasks;                   // labels to load (empty: all); an unknown label is an error
  bool skip_bad = false;                            // report and leave out bad items instead of failing
  std::function<void(const std::string&)> on_skip;  // one line per item left out (skip_bad)
};

struct CoreBundle {
  std::string dir;
  std::vector<CoreTask> tasks;  // in core.yaml's order
  // sha256 over "sha256  relative/path\n" lines of core.yaml, eval_meta_data.csv and the data
  // files of the loaded tasks, in that order (sha256sum's format).
  std::string checksum;
};

CoreBundle read_bundle(const std::string& dir, const BundleOptions& opt = {});

// Parsing of the parts, exposed for tests. `path` names the source in messages.
struct CoreTaskSpec {
  std::string label, type, dataset_uri, delimiter = " ";
  int shots = 0;
  int line = 0;  // 1-based line of the entry in core.yaml
};
std::vector<CoreTaskSpec> parse_core_yaml(const std::string& text, const std::string& path);
// label -> baseline percent; a repeated label keeps its last row.
std::vector<std::pair<std::string, double>> parse_baselines_csv(const std::string& text, const std::string& path);
// The items of one JSONL file.
std::vector<CoreItem> parse_task_items(const std::string& text, const std::string& path, CoreTaskType type,
                                       const BundleOptions& opt);

}  // namespace nt
