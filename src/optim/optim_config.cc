// SPDX-License-Identifier: MIT
#include "optim/optim_config.h"

#include <cmath>
#include <cstdlib>
#include <numbers>

#include "core/check.h"

namespace nt {

namespace {

// "b1,b2" -> the two numbers; false unless both parse whole and lie in [0, 1).
bool parse_betas(const std::string& s, double* b1, double* b2) {
  const size_t comma = s.find(',');
  if (comma == std::string::npos) return false;
  const std::string first = s.substr(0, comma), second = s.substr(comma + 1);
  if (first.empty() || second.empty()) return false;
  char* end = nullptr;
  *b1 = std::strtod(first.c_str(), &end);
  if (*end != '\0') return false;
  *b2 = std::strtod(second.c_str(), &end);
  if (*end != '\0') return false;
  return *b1 >= 0 && *b1 < 1 && *b2 >= 0 && *b2 < 1;
}

void fill_betas(std::string& s, double b1, double b2) {
  if (s.empty()) s = strf("%g,%g", b1, b2);
}

void fill(double& x, double value) {
  if (x < 0) x = value;
}

}  // namespace

void OptimConfig::check_betas(const char* flag, const std::string& value) {
  double b1 = 0, b2 = 0;
  if (!value.empty() && !parse_betas(value, &b1, &b2))
    fail("%s %s: expected two numbers in [0, 1) separated by a comma, e.g. 0.8,0.95", flag, value.c_str());
}

void OptimConfig::resolve(int d_model, bool tied) {
  // nanochat's later settings (without its batch-size LR scale): the embeddings' learning rates
  // scale as (d_model / 768)^-0.5, the scalars' do not.
  const double scale = std::pow(double(d_model) / 768.0, -0.5);
  fill(lr_head, 0.004 * scale);
  // One table as embedding and head takes the head's rate: the embedding's, 50 times larger,
  // moves every logit so far each step that the model never learns.
  fill(lr_embed, tied ? lr_head : 0.2 * scale);
  fill(lr_value_embed, 0.15 * scale);
  fill(lr_resid_lambdas, 0.005);
  fill(lr_x0_lambdas, 0.5);
  fill(lr_gates, 0.2);
  validate_fields(*this);  // --beta1/--beta2 are checked before they become defaults
  fill_betas(adam_betas_embed, beta1, beta2);
  fill_betas(adam_betas_head, beta1, beta2);
  fill_betas(adam_betas_value_embed, 0.8, 0.995);
  fill_betas(adam_betas_resid_lambdas, 0.8, 0.95);
  fill_betas(adam_betas_x0_lambdas, 0.96, 0.95);
  fill_betas(adam_betas_gates, 0.8, 0.95);
  fill(adam_wd_embed, weight_decay);
  fill(adam_wd_head, weight_decay);
  fill(adam_wd_value_embed, 0.01);
  fill(adam_wd_resid_lambdas, 0.05);
  fill(adam_wd_x0_lambdas, 0.0);
  fill(adam_wd_gates, 0.0);
  validate_fields(*this);
  if (ns_coeffs() == NsCoeffs::kPolarExpress && ns_steps > kPolarExpressSteps)
    fail("--ns-steps %d: Polar Express has %d iterations (use --ns-steps %d or fewer)", ns_steps, kPolarExpressSteps,
         kPolarExpressSteps);
  if (cautious_wd && muon_wd == 0) fail("--cautious-wd: needs a Muon weight decay (--muon-wd > 0)");
}

nlohmann::json OptimConfig::to_json() const { return fields_to_json(*this); }

AdamGroup OptimConfig::adam_group(ParamGroup g) const {
  auto make = [](double lr, const std::string& betas, double wd) {
    AdamGroup a{lr, 0, 0, wd};
    NT_CHECK(parse_betas(betas, &a.beta1, &a.beta2), "AdamW betas '%s' not resolved", betas.c_str());
    return a;
  };
  switch (g) {
    case ParamGroup::kEmbed:
      return make(lr_embed, adam_betas_embed, adam_wd_embed);
    case ParamGroup::kHead:
      return make(lr_head, adam_betas_head, adam_wd_head);
    case ParamGroup::kValueEmbed:
      return make(lr_value_embed, adam_betas_value_embed, adam_wd_value_embed);
    case ParamGroup::kResidLambdas:
      return make(lr_resid_lambdas, adam_betas_resid_lambdas, adam_wd_resid_lambdas);
    case ParamGroup::kX0Lambdas:
      return make(lr_x0_lambdas, adam_betas_x0_lambdas, adam_wd_x0_lambdas);
    case ParamGroup::kGates:
      return make(lr_gates, adam_betas_gates, adam_wd_gates);
    case ParamGroup::kMatrix:
      break;
  }
  NT_CHECK(false, "the matrices are Muon's, not an AdamW group");
  return {};
}

double OptimConfig::muon_momentum_at(int64_t step, double warmdown) const {
  double mu = momentum;
  if (step < muon_momentum_warmup) {
    const double frac = double(step) / double(muon_momentum_warmup);
    mu = (1 - frac) * muon_momentum_start + frac * momentum;
  } else if (muon_momentum_final >= 0 && warmdown > 0) {
    mu = (1 - warmdown) * momentum + warmdown * muon_momentum_final;
  }
  return mu;
}

double OptimConfig::muon_wd_at(double progress) const {
  if (muon_wd_schedule == "constant") return muon_wd;
  return muon_wd * 0.5 * (1 + std::cos(std::numbers::pi * progress));
}

}  // namespace nt
