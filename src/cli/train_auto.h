// SPDX-License-Identifier: MIT
// `nanotrain train --preset auto`: the planner (experiment/planner.h) picks the shape and batch for
// --time-budget, and they become ordinary flags, so config.json records a run that repeats
// without the planner.
#pragma once
#include <CLI/CLI.hpp>

#include "train/train_config.h"

namespace nt::cli {

// Adds "auto" to --preset's help.
void describe_auto_preset(CLI::App* train);
// With --preset auto: plans (printing the planner's table unless --quiet) and writes the choice
// into cfg. Errors name the flag: no --time-budget (or --steps), shape or batch flags given too,
// several ranks.
void resolve_auto_preset(const CLI::App& train, TrainConfig& cfg);

}  // namespace nt::cli
