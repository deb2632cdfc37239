// SPDX-License-Identifier: MIT
// Sweep files in TOML: the same keys as the JSON form (docs/EXPERIMENTS.md), read with toml++ and
// handed on as the JSON value they stand for, with the line of every value kept for messages.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "experiment/sweep_plan.h"

namespace nt::experiment {

struct TomlSweepFile {
  nlohmann::json json;  // tables as objects, arrays as lists, strings, integers, floats, booleans
  SweepFileLocator at;  // "PATH:LINE" of a value by its keys
};

// Errors (nt::Error) name the file and the line: a TOML syntax error with its column, a date or
// time (no flag takes one), nesting deeper than kJsonMaxDepth, text over kJsonMaxBytes.
TomlSweepFile parse_toml_sweep(std::string_view text, const std::string& path);
// The same from a file, refused before reading when it is over kJsonMaxBytes.
TomlSweepFile read_toml_sweep_file(const std::string& path);

}  // namespace nt::experiment
