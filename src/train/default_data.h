// SPDX-License-Identifier: MIT
// The default data path of `nanotrain train`: the pinned public-domain corpus, a BPE tokenizer
// of 8192 tokens trained on it, and its token shards, made on first use (each step skipped
// when its output exists) with the same commands speedrun.sh runs.
#pragma once
#include <string>

namespace nt {

inline constexpr const char* kDefaultDataDir = "data/shards-8192";

// Makes kDefaultDataDir if it has no data.json yet; returns it.
std::string ensure_default_data(bool quiet);

}  // namespace nt
