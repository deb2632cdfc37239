// SPDX-License-Identifier: MIT
// Sweep files (experiment/sweep_plan.h, experiment/sweep_toml.h): the text as TOML and as JSON,
// each read into a sweep's spec and expanded into its runs.
// Input: the file's text.
#include <nlohmann/json.hpp>

#include "core/json_limits.h"
#include "experiment/sweep_plan.h"
#include "experiment/sweep_toml.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = nt::fuzz::as_string(data, size);
  const auto plan = [](const nt::experiment::SweepSpec& s) {
    // Expanding is bounded only by the product of the grid: keep the fuzzer's runs small.
    size_t runs = size_t(std::max(1, s.seeds)) * std::max<size_t>(1, s.variants.size());
    for (const auto& a : s.grid) runs *= a.values.size();
    if (runs <= 4096) (void)nt::experiment::expand_sweep(s, 1);
  };
  nt::fuzz::expect_ok_or_error([&] {
    const nt::experiment::TomlSweepFile t = nt::experiment::parse_toml_sweep(in, "f.toml");
    plan(nt::experiment::parse_sweep_file(t.json, "f.toml", t.at));
  });
  nt::fuzz::expect_ok_or_error([&] {
    nlohmann::json j;
    try {
      j = nt::parse_json(in, "f.json");
    } catch (const nlohmann::json::exception&) {
      return;
    }
    plan(nt::experiment::parse_sweep_file(j, "f.json"));
  });
  return 0;
}
