// SPDX-License-Identifier: MIT
// The optimizers' settings, one field per flag: every AdamW group's learning rate, betas and
// decoupled weight decay, and Muon's variants (Polar Express, MuonEq, Muon+ renormalisation,
// NorMuon, cautious weight decay, momentum warm-up and warm-down). The defaults are the
// baseline: the fixed quintic and nothing else.
#pragma once
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "composed/newton_schulz_bf16.h"
#include "core/fields.h"
#include "model/params.h"

namespace nt {

// One AdamW group's settings, resolved.
struct AdamGroup {
  double lr, beta1, beta2, wd;
};

struct OptimConfig {
  double lr_matrix = 0.02;  // Muon
  double lr_embed = -1;     // AdamW; < 0: 0.2 * (d_model / 768)^-0.5
  double lr_head = -1;      // AdamW; < 0: 0.004 * (d_model / 768)^-0.5
  // The variants' AdamW groups (< 0: nanochat's values, VARIANTS table in optim_config.cc).
  double lr_value_embed = -1, lr_resid_lambdas = -1, lr_x0_lambdas = -1, lr_gates = -1;
  double beta1 = 0.8, beta2 = 0.95, eps = 1e-10;
  double weight_decay = 0.0;  // AdamW: the embedding's and the head's unless their own is given
  // Per AdamW group "beta1,beta2" ("": --beta1,--beta2 for the embedding and the head,
  // nanochat's for the others) and decoupled weight decay (< 0: the group's default).
  std::string adam_betas_embed, adam_betas_head, adam_betas_value_embed, adam_betas_resid_lambdas,
      adam_betas_x0_lambdas, adam_betas_gates;
  double adam_wd_embed = -1, adam_wd_head = -1, adam_wd_value_embed = -1, adam_wd_resid_lambdas = -1,
         adam_wd_x0_lambdas = -1, adam_wd_gates = -1;
  double momentum = 0.95;  // Muon
  int ns_steps = 5;
  std::string muon_coeffs = "quintic";  // quintic | polar-express
  bool muon_eq = false;                 // rows to the mean row norm before the iteration
  bool muon_renorm = false;             // the update's Frobenius norm to sqrt(min(rows, cols))
  bool normuon = false;                 // factored second moment after the iteration
  double normuon_beta2 = 0.9;
  double muon_wd = 0.0;                      // Muon's decoupled weight decay (times the LR)
  bool cautious_wd = false;                  // decay only where the update and the weight agree in sign
  std::string muon_wd_schedule = "cosine";   // cosine (to 0 over the budget) | constant
  int muon_momentum_warmup = 0;              // steps from muon_momentum_start to --muon-momentum
  double muon_momentum_start = 0.85;
  double muon_momentum_final = -1;  // >= 0: momentum at the end of the LR warm-down (linear)
  bool bf16_newton_schulz = false;  // run Newton-Schulz's GEMMs in bf16 (fp32 accumulation)
  double lr_scale = 1.0;  // multiplies every learning rate (halved by --on-nan rollback)

  // Fills the defaults (d_model-scaled learning rates, every group's betas and decay) and checks
  // ranges and combinations (errors name the flag). `tied`: the embedding is also the head, and
  // its learning rate defaults to the head's.
  void resolve(int d_model, bool tied);
  nlohmann::json to_json() const;
  // A resolved AdamW group's settings (not for kMatrix).
  AdamGroup adam_group(ParamGroup g) const;
  NsCoeffs ns_coeffs() const { return muon_coeffs == "polar-express" ? NsCoeffs::kPolarExpress : NsCoeffs::kQuintic; }
  // Muon's momentum before optimizer step `step` (0-based), at `warmdown` of the LR warm-down
  // done (0 outside it): a linear warm-up from muon_momentum_start over the first
  // muon_momentum_warmup steps, and a linear warm-down to muon_momentum_final.
  double muon_momentum_at(int64_t step, double warmdown) const;
  // Muon's weight decay at `progress` of the budget: muon_wd * (1 + cos(pi progress)) / 2, or
  // constant.
  double muon_wd_at(double progress) const;

  // The settings a flag sets (bf16_newton_schulz and lr_scale are the trainer's).
  template <class V>
  void for_each_field(V&& v) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    constexpr const char* kLr = "must be >= 0";
    v(lr_matrix, {.key = "lr_matrix", .flag = "--lr-matrix", .help = "Muon learning rate", .show_default = true,
                  .min = 0, .finite = true, .error = kLr});
    v(lr_embed, {.key = "lr_embed", .flag = "--lr-embed",
                 .help = "AdamW LR for the embedding (default 0.2*(d/768)^-0.5)", .min = 0, .finite = true,
                 .negative_is_default = true, .error = kLr});
    v(lr_head, {.key = "lr_head", .flag = "--lr-head",
                .help = "AdamW LR for the output head (default 0.004*(d/768)^-0.5)", .min = 0, .finite = true,
                .negative_is_default = true, .error = kLr});
    v(lr_value_embed, {.key = "lr_value_embed", .flag = "--lr-value-embed",
                       .help = "AdamW LR for the value embeddings (default 0.15*(d/768)^-0.5)", .optional = true,
                       .min = 0, .finite = true, .negative_is_default = true, .error = kLr});
    v(lr_resid_lambdas, {.key = "lr_resid_lambdas", .flag = "--lr-resid-lambdas",
                         .help = "AdamW LR for resid_lambdas (default 0.005)", .optional = true, .min = 0,
                         .finite = true, .negative_is_default = true, .error = kLr});
    v(lr_x0_lambdas, {.key = "lr_x0_lambdas", .flag = "--lr-x0-lambdas",
                      .help = "AdamW LR for x0_lambdas (default 0.5)", .optional = true, .min = 0, .finite = true,
                      .negative_is_default = true, .error = kLr});
    v(lr_gates, {.key = "lr_gates", .flag = "--lr-gates",
                 .help = "AdamW LR for the smear and backout gates (default 0.2)", .optional = true, .min = 0,
                 .finite = true, .negative_is_default = true, .error = kLr});
    v(beta1, {.key = "beta1", .flag = "--beta1", .help = "AdamW beta1 (embedding, head)", .show_default = true,
              .min = 0, .max = 1, .max_open = true, .error = "must be in [0, 1)"});
    v(beta2, {.key = "beta2", .flag = "--beta2", .help = "AdamW beta2 (embedding, head)", .show_default = true,
              .min = 0, .max = 1, .max_open = true, .error = "must be in [0, 1)"});
    v(eps, {.key = "eps", .flag = "--adam-eps", .help = "AdamW epsilon", .show_default = true, .min = 0,
            .max = kInf, .error = "must be >= 0"});
    v(weight_decay, {.key = "weight_decay", .flag = "--weight-decay",
                     .help = "AdamW decoupled weight decay (embedding, head)", .show_default = true, .min = 0,
                     .max = kInf, .error = "must be >= 0"});
    for_each_adam_group_field(v);
    v(momentum, {.key = "momentum", .flag = "--muon-momentum", .help = "Muon Nesterov momentum",
                 .show_default = true, .min = 0, .max = 1, .max_open = true, .error = "must be in [0, 1)"});
    v(ns_steps, {.key = "ns_steps", .flag = "--ns-steps", .help = "Muon Newton-Schulz iterations",
                 .show_default = true, .min = 0, .max = 100, .error = "must be in [0, 100]"});
    for_each_muon_variant_field(v);
  }

 private:
  template <class V>
  void for_each_adam_group_field(V&& v) {
    constexpr const char* kWd = "must be >= 0";
    const auto betas = [&](std::string& s, const char* key, const char* flag, const char* help) {
      v(s, {.key = key, .flag = flag, .help = help, .optional = true, .check = check_betas});
    };
    const auto wd = [&](double& d, const char* key, const char* flag, const char* help) {
      v(d, {.key = key, .flag = flag, .help = help, .optional = true, .min = 0, .finite = true,
            .negative_is_default = true, .error = kWd});
    };
    betas(adam_betas_embed, "adam_betas_embed", "--adam-betas-embed",
          "B1,B2 of the embedding (default --beta1,--beta2)");
    betas(adam_betas_head, "adam_betas_head", "--adam-betas-head", "B1,B2 of the head (default --beta1,--beta2)");
    betas(adam_betas_value_embed, "adam_betas_value_embed", "--adam-betas-value-embed",
          "B1,B2 of the value embeddings (default 0.8,0.995)");
    betas(adam_betas_resid_lambdas, "adam_betas_resid_lambdas", "--adam-betas-resid-lambdas",
          "B1,B2 of resid_lambdas (default 0.8,0.95)");
    betas(adam_betas_x0_lambdas, "adam_betas_x0_lambdas", "--adam-betas-x0-lambdas",
          "B1,B2 of x0_lambdas (default 0.96,0.95)");
    betas(adam_betas_gates, "adam_betas_gates", "--adam-betas-gates", "B1,B2 of the gates (default 0.8,0.95)");
    wd(adam_wd_embed, "adam_wd_embed", "--adam-wd-embed", "Weight decay of the embedding (default --weight-decay)");
    wd(adam_wd_head, "adam_wd_head", "--adam-wd-head", "Weight decay of the head (default --weight-decay)");
    wd(adam_wd_value_embed, "adam_wd_value_embed", "--adam-wd-value-embed",
       "Weight decay of the value embeddings (default 0.01)");
    wd(adam_wd_resid_lambdas, "adam_wd_resid_lambdas", "--adam-wd-resid-lambdas",
       "Weight decay of resid_lambdas (default 0.05)");
    wd(adam_wd_x0_lambdas, "adam_wd_x0_lambdas", "--adam-wd-x0-lambdas", "Weight decay of x0_lambdas (default 0)");
    wd(adam_wd_gates, "adam_wd_gates", "--adam-wd-gates", "Weight decay of the gates (default 0)");
  }

  template <class V>
  void for_each_muon_variant_field(V&& v) {
    v(muon_coeffs, {.key = "muon_coeffs", .flag = "--muon-coeffs",
                    .help = "Newton-Schulz polynomials: the fixed quintic or Polar Express's (<= 5 steps)",
                    .show_default = true, .optional = true, .choices = "quintic polar-express"});
    v(muon_eq, {.key = "muon_eq", .flag = "--muon-eq", .help = "MuonEq: rows to the mean row norm before Newton-Schulz",
                .optional = true});
    v(muon_renorm, {.key = "muon_renorm", .flag = "--muon-renorm",
                    .help = "Muon+: the orthogonalised update's norm to sqrt(min(rows, cols))", .optional = true});
    v(normuon, {.key = "normuon", .flag = "--normuon",
                .help = "NorMuon: per-row (or -column) second moment after Newton-Schulz", .optional = true});
    v(normuon_beta2, {.key = "normuon_beta2", .flag = "--normuon-beta2", .help = "NorMuon's second-moment EMA",
                      .show_default = true, .optional = true, .min = 0, .max = 1, .max_open = true,
                      .error = "must be in [0, 1)"});
    v(muon_wd, {.key = "muon_wd", .flag = "--muon-wd", .help = "Muon decoupled weight decay (times the LR)",
                .show_default = true, .optional = true, .min = 0, .finite = true, .error = "must be >= 0"});
    v(cautious_wd, {.key = "cautious_wd", .flag = "--cautious-wd",
                    .help = "Muon's decay only where update and weight agree in sign", .optional = true});
    v(muon_wd_schedule, {.key = "muon_wd_schedule", .flag = "--muon-wd-schedule",
                         .help = "Muon's decay over the budget: cosine to 0, or constant", .show_default = true,
                         .optional = true, .choices = "cosine constant"});
    v(muon_momentum_warmup, {.key = "muon_momentum_warmup", .flag = "--muon-momentum-warmup",
                             .help = "Steps of Muon momentum warm-up from --muon-momentum-start", .show_default = true,
                             .optional = true, .min = 0, .max = 1e9, .error = "must be >= 0"});
    v(muon_momentum_start, {.key = "muon_momentum_start", .flag = "--muon-momentum-start",
                            .help = "Muon momentum at step 0 of the warm-up", .show_default = true, .optional = true,
                            .min = 0, .max = 1, .max_open = true, .error = "must be in [0, 1)"});
    v(muon_momentum_final, {.key = "muon_momentum_final", .flag = "--muon-momentum-final",
                            .help = "Muon momentum at the end of the LR warm-down (default: no change)",
                            .optional = true, .min = 0, .max = 1, .max_open = true, .negative_is_default = true,
                            .error = "must be in [0, 1)"});
  }
  static void check_betas(const char* flag, const std::string& value);
};

}  // namespace nt
