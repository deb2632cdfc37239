// SPDX-License-Identifier: MIT
#include "train/preset_optim.h"

#include <cmath>

namespace nt {

void apply_preset_optim(const std::string& preset, int d_model, OptimConfig& o) {
  if (preset != "nanochat") return;
  const OptimConfig base;
  auto set = [](auto& field, const auto& baseline, const auto& value) {
    if (field == baseline) field = value;
  };
  const double dm = std::pow(d_model / 768.0, -0.5);
  set(o.muon_coeffs, base.muon_coeffs, std::string("polar-express"));
  set(o.muon_eq, base.muon_eq, true);
  set(o.muon_renorm, base.muon_renorm, true);
  set(o.normuon, base.normuon, true);
  set(o.muon_wd, base.muon_wd, 0.2);
  set(o.cautious_wd, base.cautious_wd, true);
  set(o.muon_momentum_warmup, base.muon_momentum_warmup, 300);
  set(o.lr_embed, base.lr_embed, 0.3 * dm);
  set(o.lr_head, base.lr_head, 0.008 * dm);
  set(o.adam_betas_embed, base.adam_betas_embed, std::string("0.8,0.995"));
  set(o.adam_betas_head, base.adam_betas_head, std::string("0.8,0.96"));
  set(o.adam_wd_embed, base.adam_wd_embed, 0.001);
  set(o.adam_wd_head, base.adam_wd_head, 0.01);
}

}  // namespace nt
