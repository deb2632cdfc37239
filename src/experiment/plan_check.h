// SPDX-License-Identifier: MIT
// `nanotrain plan --check`: the planner checks itself by training its choice and the candidates
// it ranked next, as an ordinary sweep (sweep_runner.h), and compares the measured val_bpb.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiment/planner.h"
#include "train/train_config.h"

namespace nt::experiment {

struct PlanCheckOptions {
  std::string out;        // the sweep folder
  int runs = 5;           // the choice and the next runs - 1 candidates by predicted val_bpb
  double budget_s = 0;    // each run's --time-budget
  double tolerance = 0.01;  // the choice may be this fraction behind the best run
  bool verbose = false, quiet = false;
};

struct PlanCheckRow {
  size_t candidate = 0;  // index in the report
  std::string name, state;
  double predicted = NAN, measured = NAN;
};

struct PlanCheck {
  std::string out;
  std::vector<PlanCheckRow> rows;  // rows[0] is the choice
  size_t best = 0;                 // the row with the lowest measured val_bpb
  double gap = NAN;                // (choice - best) / best
  bool within = false;             // gap <= tolerance
  int failed = 0;
};

// The check's runs (each the base settings with a candidate's shape and batch, its budget and no
// sample), run as a resumable sweep; rethrows nt::Interrupted like run_sweep.
PlanCheck check_plan(const PlanReport& r, const TrainConfig& base, const PlanCheckOptions& o);

nlohmann::json plan_check_json(const PlanCheck& c, double tolerance);
std::string plan_check_text(const PlanCheck& c, double tolerance);

}  // namespace nt::experiment
