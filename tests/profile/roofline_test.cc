// SPDX-License-Identifier: MIT
// The roofline: which roof bounds a kernel and how close it runs to it, and the SVG chart (one
// marker per kernel that does arithmetic, placed by its intensity and rate, names escaped).
#include "profile/roofline.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "profile/svg.h"

namespace nt {
namespace {

using profile::KernelRate;
using profile::Roofs;

const Roofs kRoofs{100.0, 200.0, 10.0};  // ridges at 10 (fp32) and 20 (bf16) FLOP per byte

// What place() says of one kernel: which roof bounds it, its intensity, that roof's height and
// the share of it the kernel reached.
struct Expected {
  bool memory_bound;
  double intensity, roof_gflops, pct_roof;
};
void expect_placed(const KernelRate& k, const Expected& e) {
  const auto p = profile::place(kRoofs, k);
  EXPECT_EQ(p.memory_bound, e.memory_bound) << k.name;
  EXPECT_DOUBLE_EQ(p.intensity, e.intensity) << k.name;
  EXPECT_DOUBLE_EQ(p.roof_gflops, e.roof_gflops) << k.name;
  EXPECT_DOUBLE_EQ(p.pct_roof, e.pct_roof) << k.name;
  EXPECT_DOUBLE_EQ(p.gbs, k.bytes / k.seconds * 1e-9) << k.name;
  EXPECT_DOUBLE_EQ(p.gflops, k.flops / k.seconds * 1e-9) << k.name;
}

TEST(Roofline, BelowTheRidgeTheBandwidthBounds) {
  // 1 FLOP a byte: the bandwidth roof is 10 GFLOP/s; 2 GFLOP/s is 20 % of it.
  expect_placed({"k", 0.5, 1e9, 1e9, 100.0, false}, {true, 1.0, 10.0, 20.0});
  // Between the two ridges (15 FLOP a byte), a bf16 kernel is still bound by the bandwidth.
  expect_placed({"m", 1.0, 1.5e10, 1e9, 200.0, true}, {true, 15.0, 150.0, 10.0});
}

TEST(Roofline, AboveTheRidgeTheComputePeakBounds) {
  // 100 FLOP a byte, 100 GFLOP/s: all of the fp32 peak, half of the bf16 one.
  expect_placed({"f", 1.0, 1e11, 1e9, 100.0, false}, {false, 100.0, 100.0, 100.0});
  expect_placed({"b", 1.0, 1e11, 1e9, 200.0, true}, {false, 100.0, 200.0, 50.0});
}

TEST(Roofline, DataMovementIsMeasuredAgainstTheBandwidth) {
  // No arithmetic: no intensity and no compute roof; 5 GB/s is half the bandwidth.
  expect_placed({"copy", 0.2, 0.0, 1e9, 100.0, false}, {true, 0.0, 0.0, 50.0});
}

// A zero time, byte count or roof is a caller's bug (bench measures all of them): an internal
// check stops the process rather than draw a meaningless chart.
TEST(RooflineDeathTest, RejectsMeaninglessInput) {
  EXPECT_DEATH(profile::place(kRoofs, {"k", 0.0, 1.0, 1.0, 100.0, false}), "positive time");
  EXPECT_DEATH(profile::place(kRoofs, {"k", 1.0, 1.0, 0.0, 100.0, false}), "positive time");
  EXPECT_DEATH(profile::place({0.0, 1.0, 1.0}, {"k", 1.0, 1.0, 1.0, 100.0, false}), "roofs must be positive");
}

TEST(Roofline, AxesAreLogarithmicInWholeDecades) {
  EXPECT_DOUBLE_EQ(profile::decade_below(0.3), 0.1);
  EXPECT_DOUBLE_EQ(profile::decade_above(0.3), 1.0);
  EXPECT_DOUBLE_EQ(profile::decade_below(1000.0), 1000.0);
  EXPECT_DOUBLE_EQ(profile::decade_above(1000.0), 1000.0);
  const profile::LogAxis ax{1.0, 100.0, 0.0, 200.0};
  EXPECT_NEAR(ax(10.0), 100.0, 1e-9);
  EXPECT_NEAR(ax(100.0), 200.0, 1e-9);
  const profile::LogAxis ay{1.0, 1000.0, 300.0, 0.0};  // pixels grow downwards
  EXPECT_NEAR(ay(10.0), 200.0, 1e-9);
}

// The kernels' markers in drawing order: (cx, cy).
std::vector<std::pair<double, double>> markers(const std::string& svg) {
  std::vector<std::pair<double, double>> out;
  const std::regex re("<circle class=\"kernel\" cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2])});
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Roofline, ChartPlacesEveryKernelThatComputes) {
  const std::vector<KernelRate> ks = {
      {"gemm", 1.0, 1e11, 1e9, 100.0, false},       // 100 FLOP/B, 100 GFLOP/s
      {"norm", 1.0, 1e9, 2e9, 100.0, false},        // 0.5 FLOP/B, 1 GFLOP/s
      {"copy", 1.0, 0.0, 4e9, 100.0, false},        // no arithmetic: listed, not plotted
      {"a&b<c", 1.0, 2e11, 1e9, 200.0, true},       // 200 FLOP/B, 200 GFLOP/s
  };
  const std::string svg = profile::roofline_svg(kRoofs, ks, "title \"x\"", "sub");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  const auto m = markers(svg);
  ASSERT_EQ(m.size(), 3u);  // gemm, norm, a&b<c: not the copy
  // Right means more FLOPs a byte, up (smaller y) more GFLOP/s.
  EXPECT_GT(m[0].first, m[1].first);
  EXPECT_LT(m[0].second, m[1].second);
  EXPECT_GT(m[2].first, m[0].first);
  EXPECT_LT(m[2].second, m[0].second);
  // The copy is named in the legend; names and the title are escaped.
  EXPECT_NE(svg.find(">copy  40 %</text>"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b&lt;c"), std::string::npos);
  EXPECT_EQ(svg.find("a&b<c"), std::string::npos);
  EXPECT_NE(svg.find("title &quot;x&quot;"), std::string::npos);
  // The roofs are drawn and labelled with the measured figures.
  EXPECT_NE(svg.find("fp32 peak 100 GF/s"), std::string::npos);
  EXPECT_NE(svg.find("bf16 peak 200 GF/s"), std::string::npos);
  EXPECT_NE(svg.find("memory 10.0 GB/s (triad)"), std::string::npos);
}

TEST(Roofline, EscapesXml) { EXPECT_EQ(profile::xml_escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;"); }

}  // namespace
}  // namespace nt
