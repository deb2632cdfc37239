// SPDX-License-Identifier: MIT
// The planner's scaling rule, a Chinchilla-style law with a price for repeated data:
//   val_bpb(N, D, U) = E + A / N^alpha + B / D^beta + C * max(0, D / U - 1)
// (N: the model's non-embedding parameters, D: tokens trained, U: tokens in the training data, so
// D / U - 1 is the epochs past the first; on a small corpus, each of them overfits a little more),
// its fit to measured runs and its coefficients file (schema "nanotrain-scaling-law/1",
// docs/EXPERIMENTS.md).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nt::experiment {

// One measured run: what the law is fit to.
struct FitPoint {
  std::string name;  // the run (folder name), for the report
  double params = 0;  // N: parameters outside the embedding lookup
  double tokens = 0;  // D: tokens trained
  double val_bpb = 0;
  double unique_tokens = 0;  // U: tokens in the training data (0: unknown, taken as never repeated)
};

struct ScalingLaw {
  double E = 0, A = 0, alpha = 0, B = 0, beta = 0;
  double C = 0;  // bpb per epoch past the first
  // unique_tokens 0: the data's size is unknown, and no token counts as repeated.
  double predict(double params, double tokens, double unique_tokens = 0) const;
};

// Epochs past the first: max(0, tokens / unique_tokens - 1), 0 when unique_tokens is 0.
double repeated_epochs(double tokens, double unique_tokens);

struct ScalingFit {
  ScalingLaw law;
  double rmse = 0, max_abs_error = 0;  // over the points, in bpb
  bool at_bound = false;  // an exponent ended at the edge of the range searched (the data hardly constrain it)
};

// Least squares over the points with E, A, B, C >= 0 and alpha, beta in [0.02, 2]. For each pair
// of exponents the coefficients are a small non-negative linear least-squares problem, solved
// exactly; the exponents are searched on a grid, then on a finer one around the best. C is fit only
// when some run repeated its data (it stays 0 otherwise: nothing measures it). Refuses
// (nt::fail) too few points (fewer than 5), non-finite or non-positive values, and data that
// cannot separate the terms: fewer than 3 distinct parameter counts or token counts, or either
// spanning less than a factor 1.5.
ScalingFit fit_scaling_law(const std::vector<FitPoint>& points);

// The coefficients file: the law, the fit's quality, where it came from (a sentence), the date and
// every run with its prediction.
nlohmann::json scaling_law_json(const ScalingFit& fit, const std::vector<FitPoint>& points, const std::string& source,
                                const std::string& date);
// Reads a coefficients file's law; errors name the file and the key.
ScalingLaw scaling_law_from_json(const nlohmann::json& j, const std::string& what);
ScalingLaw read_scaling_law(const std::string& path);
// The coefficients shipped with nanotrain (experiment/scaling_law_default.json, compiled in).
const nlohmann::json& default_scaling_law_json();

// The finished runs at or below each path (as `nanotrain runs` finds them) as fit points: N from
// summary.json's params_matmul, D from tokens_trained, val_bpb; U from config.json's
// data_train_tokens, or for runs that predate it from the data.json of the run's data_dir where
// that folder holds the same tokenizer (else 0, unknown). Runs without a finished summary or
// a finite val_bpb are skipped and named in `skipped`. Runs on different data (another tokenizer)
// are refused, since the law holds for one data set. A path that is a coefficients file contributes
// the runs it lists (its per-run unique_tokens, else its data_train_tokens), so that a refit can
// extend the runs a law was fit to; a run listed there and also given as a folder counts once.
std::vector<FitPoint> load_fit_points(const std::vector<std::string>& paths, std::vector<std::string>& skipped);

}  // namespace nt::experiment
