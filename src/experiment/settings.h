// SPDX-License-Identifier: MIT
// A run's settings by flag name, from its config.json, and the settings that differ across runs:
// what a leaderboard and a report show beside each run.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nt::experiment {

// config.json's "flags" (the flags as given, nested as TrainConfig::to_json writes them) flattened
// to flag names without "--" ("depth", "lr-matrix"); a flag left unset (0 or "") takes the
// resolved value config.json records under the same key (at the top, or under "model",
// "optimizer" or "schedule"), so a preset's depth shows as the depth it resolved to. Settings that
// say where or how a run was made rather than what it trained (run-dir, peak-gflops) are left out.
std::map<std::string, std::string> settings_from_config(const nlohmann::json& config);

// A JSON value as the settings show it: integers in full, reals as %g, strings as they are.
std::string setting_text(const nlohmann::json& v);

using Settings = std::map<std::string, std::string>;

// The keys whose value is not the same in every one of `runs` (a missing key counts as a value),
// in name order.
std::vector<std::string> differing_keys(const std::vector<const Settings*>& runs);

// "k=v k2=v2" for the given keys of one run ("-" for a missing key; "(baseline)" when keys is empty).
std::string settings_label(const Settings& s, const std::vector<std::string>& keys);

}  // namespace nt::experiment
