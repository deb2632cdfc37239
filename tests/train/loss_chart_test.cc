// SPDX-License-Identifier: MIT
// The run folder's loss chart: a curve through every step's loss and its moving average, a
// marker per evaluation with the last one's val_bpb, from metrics.jsonl's lines (others skipped).
#include "train/loss_chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace nt {
namespace {

// The points of each polyline, in pixels.
std::vector<std::vector<std::pair<double, double>>> polylines(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> out;
  const std::regex line("<polyline [^>]*points=\"([^\"]*)\"");
  const std::regex point("([0-9.]+),([0-9.]+)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it) {
    const std::string pts = (*it)[1];
    out.emplace_back();
    for (auto p = std::sregex_iterator(pts.begin(), pts.end(), point); p != std::sregex_iterator(); ++p)
      out.back().push_back({std::stod((*p)[1]), std::stod((*p)[2])});
  }
  return out;
}

TEST(LossChart, DrawsTheStepsAndTheEvaluations) {
  const std::string metrics =
      "{\"type\":\"step\",\"step\":1,\"loss\":9.0,\"train_seconds\":1.0}\n"
      "{\"type\":\"step\",\"step\":2,\"loss\":7.0,\"train_seconds\":2.0}\n"
      "not json at all\n"
      "{\"type\":\"rollback\",\"step\":2}\n"
      "{\"type\":\"step\",\"step\":3,\"loss\":5.0,\"train_seconds\":3.0}\n"
      "{\"type\":\"eval\",\"step\":3,\"train_seconds\":3.0,\"val_loss\":5.5,\"val_bpb\":1.2345}\n";
  const std::string svg = loss_chart_svg(metrics, "a <title>", "sub");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("a &lt;title&gt;"), std::string::npos);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);  // every step, and the moving average
  ASSERT_EQ(lines[0].size(), 3u);
  ASSERT_EQ(lines[1].size(), 3u);
  // Later steps to the right; a lower loss lower down (a larger y).
  EXPECT_LT(lines[0][0].first, lines[0][1].first);
  EXPECT_LT(lines[0][1].first, lines[0][2].first);
  EXPECT_LT(lines[0][0].second, lines[0][1].second);
  EXPECT_LT(lines[0][1].second, lines[0][2].second);
  // With fewer than 20 steps the average is the steps themselves.
  EXPECT_EQ(lines[0], lines[1]);
  EXPECT_EQ(std::regex_search(svg, std::regex("<circle class=\"eval\"[^>]*><title>step 3, 3.0 s: val loss 5.5000, "
                                              "val_bpb 1.2345</title>")),
            true);
  EXPECT_NE(svg.find(">val_bpb 1.2345</text>"), std::string::npos);
}

TEST(LossChart, AveragesLongRuns) {
  std::string metrics;
  for (int s = 1; s <= 100; ++s)  // a loss alternating 4 and 6 around 5
    metrics += "{\"type\":\"step\",\"step\":" + std::to_string(s) + ",\"loss\":" + (s % 2 ? "4.0" : "6.0") +
               ",\"train_seconds\":" + std::to_string(s) + "}\n";
  const auto lines = polylines(loss_chart_svg(metrics, "t", "s"));
  ASSERT_EQ(lines.size(), 2u);
  // The average's last swing is a fraction of the steps' own.
  const double raw_swing = std::abs(lines[0][99].second - lines[0][98].second);
  const double avg_swing = std::abs(lines[1][99].second - lines[1][98].second);
  EXPECT_GT(raw_swing, 0.0);
  EXPECT_LT(avg_swing, 0.25 * raw_swing);
}

TEST(LossChart, ThinsOutLongRuns) {
  std::string metrics;
  for (int s = 1; s <= 5001; ++s)  // falling slowly, then a last step far above the rest
    metrics += "{\"type\":\"step\",\"step\":" + std::to_string(s) + ",\"loss\":" +
               std::to_string(s < 5001 ? 10.0 - s * 1e-3 : 20.0) + ",\"train_seconds\":" + std::to_string(s) + "}\n";
  const auto lines = polylines(loss_chart_svg(metrics, "t", "s"));
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), 2001u);
    EXPECT_GE(l.size(), 1000u);
  }
  // The last step is kept (5000 is not a multiple of the stride, 3): the steps' line ends at its
  // top (the smallest y).
  const auto& raw = lines[0];
  for (size_t i = 0; i + 1 < raw.size(); ++i) EXPECT_GT(raw[i].second, raw.back().second) << i;
}

TEST(LossChart, CoreHasAPanelOfItsOwn) {
  const std::string steps =
      "{\"type\":\"step\",\"step\":1,\"loss\":9.0,\"train_seconds\":1.0}\n"
      "{\"type\":\"step\",\"step\":2,\"loss\":7.0,\"train_seconds\":2.0}\n";
  const std::string plain = loss_chart_svg(steps, "t", "s");
  EXPECT_EQ(plain.find("class=\"core\""), std::string::npos);
  const std::string svg = loss_chart_svg(steps +
                                             "{\"type\":\"core\",\"step\":1,\"train_seconds\":1.0,\"core\":-0.02}\n"
                                             "{\"type\":\"core\",\"step\":2,\"train_seconds\":2.0,\"core\":0.05}\n",
                                         "t", "s");
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 3u);  // the steps, their average, CORE
  ASSERT_EQ(lines[2].size(), 2u);
  // On the same time axis as the losses, below the loss chart, higher CORE higher up.
  EXPECT_EQ(lines[2][0].first, lines[0][0].first);
  EXPECT_EQ(lines[2][1].first, lines[0][1].first);
  EXPECT_GT(lines[2][0].second, lines[2][1].second);
  EXPECT_GT(std::min(lines[2][0].second, lines[2][1].second), std::max(lines[0][0].second, lines[0][1].second));
  EXPECT_EQ(std::regex_search(svg, std::regex("<circle class=\"core\"[^>]*><title>step 2, 2.0 s: CORE 0.0500</title>")),
            true);
  EXPECT_NE(svg.find(">CORE 0.0500</text>"), std::string::npos);
}

TEST(LossChart, SaysSoWhenNothingRan) {
  const std::string svg = loss_chart_svg("", "t", "s");
  EXPECT_NE(svg.find("no steps recorded"), std::string::npos);
  EXPECT_EQ(svg.find("<polyline"), std::string::npos);
}

}  // namespace
}  // namespace nt
