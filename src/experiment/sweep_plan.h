// SPDX-License-Identifier: MIT
// A sweep's plan: a grid of flag values, a list of named variants and a number of seeds, expanded
// into runs, each with a readable folder name and the train flags that make it what it is. The
// flags themselves are parsed by the command line (the same options as `nanotrain train`); this
// file only handles their text.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace nt::experiment {

// One flag and its values: "depth=3,4" (the flag without "--").
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

// A named set of flags: "wide:--d-model 512 --n-head 8".
struct Variant {
  std::string name;
  std::vector<std::string> args;
};

struct SweepSpec {
  std::vector<GridAxis> grid;
  std::vector<Variant> variants;
  int seeds = 0;                         // 0: not given (one run per combination, the --seed given)
  std::vector<std::string> shared_args;  // flags every run gets (a sweep file's "flags")
};

// 'depth=3,4 lr-matrix=0.01,0.02': axes separated by spaces; errors name --grid.
std::vector<GridAxis> parse_grid(const std::string& text);
// 'name:--flag value ...'; errors name --variant.
Variant parse_variant(const std::string& text);
// Splits on spaces, keeping '...' and "..." together (the quotes removed).
std::vector<std::string> split_args(const std::string& text);
// Where a value of a sweep file is, for messages: the file ("sweep.json": JSON keeps no
// positions) or the file and line ("sweep.toml:12"). keys: the path to the value ({"grid",
// "depth"}; a list's items by index, {"variants", "0"}); empty for the whole file.
using SweepFileLocator = std::function<std::string(const std::vector<std::string>& keys)>;
// A sweep file's contents: {"grid": {"depth": [3, 4]}, "variants": [{"name": "a", "args": "--x 1"}]
// or {"a": "--x 1"}, "seeds": 2, "flags": "--preset tiny" or {"preset": "tiny"}}, from JSON or
// TOML. Errors name the file (and the line, where `at` knows it).
SweepSpec parse_sweep_file(const nlohmann::json& j, const std::string& path, const SweepFileLocator& at = nullptr);
// A sweep file: *.toml as TOML (experiment/sweep_toml.h), anything else as JSON, both within
// core/json_limits.h's size and depth limits.
SweepSpec read_sweep_file(const std::string& path);
// Adds `more` to `spec` (a grid key or a variant name given twice is an error; seeds and shared
// flags given in `more` take precedence).
void merge_specs(SweepSpec& spec, const SweepSpec& more);

struct PlannedRun {
  std::string name;                                       // the folder's name under the sweep folder
  std::string variant;                                    // "" without variants
  std::vector<std::pair<std::string, std::string>> grid;  // this run's value of each axis
  uint64_t seed = 0;
  bool own_seed = false;          // --seed set by the sweep (seeds given)
  std::vector<std::string> args;  // the run's own flags: the variant's, the grid's, --seed
};

// Every combination: seeds outermost (every setting once before any repeat), then variants, then
// the grid's axes in order. base_seed: the --seed the shared flags give (seeds count up from it).
// Errors: a variant that sets a flag the grid varies, a seed axis together with --seeds, a
// duplicate name.
std::vector<PlannedRun> expand_sweep(const SweepSpec& spec, uint64_t base_seed);

// The flag names (without "--") that args set.
std::vector<std::string> flags_in(const std::vector<std::string>& args);

}  // namespace nt::experiment
