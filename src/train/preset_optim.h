// SPDX-License-Identifier: MIT
// The optimizer half of a preset: --preset nanochat's Muon and AdamW settings (docs/VARIANTS.md).
#pragma once
#include <string>

#include "optim/optim_config.h"

namespace nt {

// For --preset nanochat, nanochat's current optimizer: Polar Express, MuonEq, Muon+, NorMuon,
// cautious Muon weight decay 0.2, momentum warm-up 0.85 -> 0.95 over 300 steps, and the embedding's
// and head's AdamW groups (LRs scaled by (d_model / 768)^-0.5, betas, decay). Each setting is
// taken only where `o` still holds OptimConfig's default, so a flag given with another value wins.
// Other presets leave `o` as it is.
void apply_preset_optim(const std::string& preset, int d_model, OptimConfig& o);

}  // namespace nt
