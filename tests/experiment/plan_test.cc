// SPDX-License-Identifier: MIT
// The planner's decision: the scaling-law fit recovers known coefficients from synthetic runs (the
// price of repeated data among them) and refuses data it cannot fit; the choice is the argmin of
// the predictions among the candidates that fit the budget; the coefficients file round-trips and
// the shipped one reads.
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "experiment/plan_choice.h"
#include "experiment/planner.h"
#include "experiment/scaling_law.h"

namespace nt::experiment {
namespace {

const ScalingLaw kTruth{0.9, 40.0, 0.28, 120.0, 0.31};

// A grid of model sizes x token counts, exactly on the law (times 1 + noise[i] when given).
std::vector<FitPoint> synthetic(const ScalingLaw& law, double noise = 0) {
  std::vector<FitPoint> pts;
  int i = 0;
  for (double n : {1e6, 2.5e6, 6e6, 1.5e7})
    for (double d : {2e5, 8e5, 3e6, 1.2e7}) {
      const double wobble = noise * ((i++ % 3) - 1.0);  // -noise, 0, +noise in turn
      pts.push_back({"r" + std::to_string(i), n, d, law.predict(n, d) * (1 + wobble)});
    }
  return pts;
}

// A law with a price for repeated data, and runs on a corpus of `unique` tokens, some of them
// several epochs long.
const ScalingLaw kRepeatTruth{0.9, 40.0, 0.28, 120.0, 0.31, 0.02};
std::vector<FitPoint> synthetic_repeats(const ScalingLaw& law, double unique) {
  std::vector<FitPoint> pts;
  int i = 0;
  for (double n : {1e6, 2.5e6, 6e6, 1.5e7})
    for (double d : {2e5, 8e5, 3e6, 1.2e7, 3e7})
      pts.push_back({"r" + std::to_string(i++), n, d, law.predict(n, d, unique), unique});
  return pts;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ScalingFit, RecoversKnownCoefficients) {
  const ScalingFit f = fit_scaling_law(synthetic(kTruth));
  EXPECT_NEAR(f.law.E, kTruth.E, 0.02);
  EXPECT_NEAR(f.law.alpha, kTruth.alpha, 0.01);
  EXPECT_NEAR(f.law.beta, kTruth.beta, 0.01);
  EXPECT_LT(f.rmse, 1e-3);
  EXPECT_FALSE(f.at_bound);
  // The coefficients predict points the fit never saw.
  EXPECT_NEAR(f.law.predict(4e6, 5e7), kTruth.predict(4e6, 5e7), 2e-3);
}

TEST(ScalingFit, ToleratesNoiseAndStaysNonNegative) {
  const ScalingFit f = fit_scaling_law(synthetic(kTruth, 0.005));
  EXPECT_GE(f.law.E, 0);
  EXPECT_GE(f.law.A, 0);
  EXPECT_GE(f.law.B, 0);
  EXPECT_NEAR(f.law.predict(4e6, 3e6), kTruth.predict(4e6, 3e6), 0.03);
  EXPECT_GT(f.rmse, 1e-4);  // the noise shows in the residual
}

TEST(ScalingLaw, ChargesOnlyTheEpochsPastTheFirst) {
  EXPECT_EQ(repeated_epochs(3e6, 4e6), 0);
  EXPECT_EQ(repeated_epochs(1e7, 4e6), 1.5);
  EXPECT_EQ(repeated_epochs(1e7, 0), 0);  // the data's size unknown
  EXPECT_NEAR(kRepeatTruth.predict(2e6, 1e7, 4e6) - kRepeatTruth.predict(2e6, 1e7), 0.02 * 1.5, 1e-12);
  EXPECT_EQ(kRepeatTruth.predict(2e6, 3e6, 4e6), kRepeatTruth.predict(2e6, 3e6));
}

TEST(ScalingFit, FitsThePriceOfRepeatedDataWhenRunsRepeatTheirs) {
  const ScalingFit f = fit_scaling_law(synthetic_repeats(kRepeatTruth, 4e6));
  EXPECT_NEAR(f.law.C, kRepeatTruth.C, 2e-3);
  EXPECT_NEAR(f.law.beta, kRepeatTruth.beta, 0.01);
  EXPECT_LT(f.rmse, 1e-3);
  EXPECT_NEAR(f.law.predict(4e6, 5e7, 4e6), kRepeatTruth.predict(4e6, 5e7, 4e6), 3e-3);
  // Runs whose data size is unknown, or that never repeated it, leave the term at 0.
  EXPECT_EQ(fit_scaling_law(synthetic(kTruth)).law.C, 0);
  std::vector<FitPoint> once = synthetic_repeats(kTruth, 1e8);
  EXPECT_EQ(fit_scaling_law(once).law.C, 0);
  once[0].unique_tokens = -1;
  EXPECT_NE(error_of([&] { fit_scaling_law(once); }).find("not negative"), std::string::npos);
}

TEST(ScalingFit, RefusesTooFewOrDegenerateRuns) {
  std::vector<FitPoint> pts = synthetic(kTruth);
  EXPECT_NE(error_of([&] { fit_scaling_law({pts.begin(), pts.begin() + 4}); }).find("at least 5 finished runs"),
            std::string::npos);
  std::vector<FitPoint> one_size;
  for (const FitPoint& p : pts)
    if (p.params == 1e6) one_size.push_back(p), one_size.push_back(p);
  EXPECT_NE(error_of([&] { fit_scaling_law(one_size); }).find("parameter counts are too alike"), std::string::npos);
  std::vector<FitPoint> one_length;
  for (const FitPoint& p : pts)
    if (p.tokens == 8e5) one_length.push_back(p), one_length.push_back(p);
  EXPECT_NE(error_of([&] { fit_scaling_law(one_length); }).find("token counts are too alike"), std::string::npos);
  pts[3].val_bpb = NAN;
  EXPECT_NE(error_of([&] { fit_scaling_law(pts); }).find("must be positive and finite"), std::string::npos);
}

TEST(ScalingFit, CoefficientsFileRoundTripsAndTheShippedOneReads) {
  const std::vector<FitPoint> pts = synthetic(kTruth);
  const ScalingFit f = fit_scaling_law(pts);
  const nlohmann::json j = scaling_law_json(f, pts, "synthetic", "2026-01-01");
  EXPECT_EQ(j["schema"], "nanotrain-scaling-law/1");
  EXPECT_EQ(j["runs"].size(), pts.size());
  const ScalingLaw back = scaling_law_from_json(j, "test");
  EXPECT_DOUBLE_EQ(back.alpha, f.law.alpha);
  EXPECT_DOUBLE_EQ(back.B, f.law.B);
  const std::vector<FitPoint> rp = synthetic_repeats(kRepeatTruth, 4e6);
  const nlohmann::json jr = scaling_law_json(fit_scaling_law(rp), rp, "synthetic", "2026-01-01");
  EXPECT_GT(scaling_law_from_json(jr, "test").C, 0.0);
  EXPECT_EQ(jr["runs"][0]["unique_tokens"], 4e6);
  nlohmann::json older = jr;  // files fit before the repetition term read with C = 0
  older.erase("C");
  EXPECT_EQ(scaling_law_from_json(older, "test").C, 0.0);
  nlohmann::json bad = j;
  bad["alpha"] = -1;
  EXPECT_NE(error_of([&] { scaling_law_from_json(bad, "f.json"); }).find("f.json: alpha"), std::string::npos);
  bad = j;
  bad.erase("schema");
  EXPECT_NE(error_of([&] { scaling_law_from_json(bad, "f.json"); }).find("schema"), std::string::npos);
  const ScalingLaw shipped = scaling_law_from_json(default_scaling_law_json(), "shipped");
  EXPECT_GT(shipped.alpha, 0);
  EXPECT_GE(default_scaling_law_json()["runs"].size(), 5u);  // it says what it was fit to
}

PlanCandidate candidate(int depth, int64_t n, int batch, double step_s) {
  PlanCandidate c;
  c.depth = depth, c.d_model = 64 * depth, c.batch_size = batch, c.seq_len = 256;
  c.params = n * 2, c.params_matmul = n, c.step_tokens = int64_t(batch) * 256, c.step_seconds = step_s;
  return c;
}

TEST(PlanChoice, PicksTheLowestPrediction) {
  const std::vector<PlanCandidate> cs = {candidate(2, 1e6, 16, 0.1), candidate(4, 4e6, 16, 0.3),
                                         candidate(6, 1.2e7, 16, 1.0), candidate(4, 4e6, 32, 0.55)};
  for (double budget : {60.0, 600.0, 6000.0, 60000.0}) {
    const PlanChoice ch = choose_plan(cs, kTruth, PlanRule{budget, 10});
    size_t argmin = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      const double tokens = std::floor(budget / cs[i].step_seconds) * double(cs[i].step_tokens);
      EXPECT_NEAR(ch.predictions[i].tokens, tokens, 0.5);
      EXPECT_NEAR(ch.predictions[i].val_bpb, kTruth.predict(double(cs[i].params_matmul), tokens), 1e-12);
      if (ch.predictions[i].val_bpb < ch.predictions[argmin].val_bpb) argmin = i;
    }
    EXPECT_EQ(ch.best, argmin) << "budget " << budget;
  }
  // Larger budgets favour larger models.
  EXPECT_LT(cs[choose_plan(cs, kTruth, PlanRule{60, 10}).best].params,
            cs[choose_plan(cs, kTruth, PlanRule{60000, 10}).best].params);
}

TEST(PlanChoice, ExcludesWhatDoesNotFitAndRefusesATooSmallBudget) {
  std::vector<PlanCandidate> cs = {candidate(2, 1e6, 16, 0.1), candidate(4, 4e6, 16, 0.3),
                                   candidate(6, 1.2e7, 16, 1.0)};
  cs[2].fits_memory = false;
  const PlanChoice ch = choose_plan(cs, kTruth, PlanRule{60000, 10});
  EXPECT_EQ(ch.best, 1u);
  EXPECT_NE(ch.predictions[2].excluded.find("memory"), std::string::npos);
  // 20 steps of the fastest shape in 2 s: fewer than 50.
  const std::string err = error_of([&] { choose_plan(cs, kTruth, PlanRule{2, 50}); });
  EXPECT_NE(err.find("--budget 2.0s: too short for every candidate"), std::string::npos) << err;
  EXPECT_NE(error_of([&] { choose_plan(cs, kTruth, PlanRule{0, 1}); }).find("--budget"), std::string::npos);
  // Exactly enough steps is enough.
  EXPECT_EQ(choose_plan({candidate(2, 1e6, 16, 0.5)}, kTruth, PlanRule{5.0, 10}).predictions[0].steps, 10);
}

TEST(PlanChoice, RepeatedDataMovesTheChoiceToALargerModel) {
  // The small model trains 78.6 epochs of 4M tokens in 10 minutes, the large one 4.9.
  const std::vector<PlanCandidate> cs = {candidate(2, 1000000, 32, 1.0 / 64), candidate(4, 6000000, 32, 0.25)};
  EXPECT_EQ(choose_plan(cs, kRepeatTruth, PlanRule{600, 10}).best, 0u);  // the data's size unknown
  PlanRule rule{600, 10};
  rule.unique_tokens = 4e6;
  const PlanChoice ch = choose_plan(cs, kRepeatTruth, rule);
  EXPECT_EQ(ch.best, 1u);
  EXPECT_DOUBLE_EQ(ch.predictions[0].epochs, 38400.0 * 8192 / 4e6);
  EXPECT_NE(ch.why.find("epochs of the training data"), std::string::npos);
}

TEST(PlanChoice, ATieGoesToTheSmallerBatch) {
  const std::vector<PlanCandidate> cs = {candidate(4, 4e6, 32, 0.5), candidate(4, 4e6, 16, 0.25)};
  EXPECT_EQ(choose_plan(cs, kTruth, PlanRule{600, 10}).best, 1u);
}

TEST(Planner, TheChoiceBecomesOrdinaryTrainFlags) {
  TrainConfig cfg;
  cfg.shape.preset = "auto";
  cfg.batch_size = 3;
  const PlanCandidate c = candidate(5, 5e6, 32, 1);
  apply_plan(cfg, c);
  EXPECT_EQ(cfg.shape.preset, "cpu");
  EXPECT_EQ(cfg.shape.depth, 5);
  EXPECT_EQ(cfg.shape.d_model, 320);
  EXPECT_EQ(cfg.shape.head_dim, 64);
  EXPECT_EQ(cfg.batch_size, 32);
  const std::vector<std::string> args = {"--preset=cpu", "--depth=5", "--d-model=320", "--head-dim=64",
                                         "--batch-size=32"};
  EXPECT_EQ(plan_train_args(c), args);
  const ModelConfig m = resolve_model_config(cfg.shape, 8192);
  EXPECT_EQ(m.n_head, 5);
  EXPECT_EQ(m.d_model, 320);
}

TEST(Planner, ParsesShapes) {
  EXPECT_EQ(parse_plan_shapes("2x128,4x256"), (std::vector<std::pair<int, int>>{{2, 128}, {4, 256}}));
  for (const char* bad : {"", "4", "4x250", "0x128", "4x256,", "4x256x2", "ax128"})
    EXPECT_NE(error_of([&] { parse_plan_shapes(bad); }).find("--shapes"), std::string::npos) << bad;
  for (const auto& [depth, width] : plan_shapes()) EXPECT_EQ(width % 64, 0) << depth;
}

}  // namespace
}  // namespace nt::experiment
