// SPDX-License-Identifier: MIT
// `nanotrain train`'s flags as a list of arguments: the sweep gives each of its runs the shared
// flags plus its own, and parses them with exactly the options `train` has (field_options.h).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "train/train_config.h"

namespace nt::cli {

// The flags a sweep manages itself, refused among the flags a run is given.
inline const std::vector<std::string> kSweepOwnedFlags = {"--run-dir", "--resume", "--overwrite", "--quiet"};

// A TrainConfig from train flags ("--depth=4", or "--depth", "4"); a flag given again overrides
// the earlier one. Errors (unknown flags, bad values) name `what` and the flag.
TrainConfig train_config_from_args(const std::vector<std::string>& args, const std::string& what);

// The options given on a command line among those named, as "--name=value" arguments (a flag as
// "--name" or "--name=false").
std::vector<std::string> given_args(const CLI::App& app, const std::vector<std::string>& names);

// The flag names of TrainConfig's options ("--depth", ...).
std::vector<std::string> train_flag_names();

}  // namespace nt::cli
