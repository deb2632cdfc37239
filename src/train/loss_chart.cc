// SPDX-License-Identifier: MIT
#include "train/loss_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "profile/svg.h"

namespace nt {

namespace {

constexpr double kWidth = 900, kLeft = 80, kRight = 860, kTop = 84, kBottom = 400;
constexpr size_t kMaxPoints = 2000;  // a line's points at most
constexpr const char* kRawColour = "#aec7e8";
constexpr const char* kTrainColour = "#1f77b4";
constexpr const char* kValColour = "#ff7f0e";
constexpr const char* kCoreColour = "#2ca02c";
// CORE's panel below the loss chart, on the same time axis (CORE and loss share no scale).
constexpr double kCoreTop = kBottom + 64, kCoreBottom = kCoreTop + 110, kCorePanel = kCoreBottom - kBottom;

struct Eval {
  double seconds, loss, bpb;
  int64_t step;
};

struct CorePoint {
  double seconds, core;
  int64_t step;
};

// A finite number at j[key], or NaN.
double number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return NAN;
  const double v = it->get<double>();
  return std::isfinite(v) ? v : NAN;
}

// The step records' (training seconds, loss), the evaluations and the CORE evaluations, from
// metrics.jsonl's lines.
void read_records(const std::string& metrics, std::vector<std::pair<double, double>>& train, std::vector<Eval>& evals,
                  std::vector<CorePoint>& cores) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("type")) continue;
    const double s = number(j, "train_seconds");
    if (j["type"] == "step" && std::isfinite(s) && std::isfinite(number(j, "loss"))) {
      train.push_back({s, number(j, "loss")});
    } else if (j["type"] == "eval" && std::isfinite(s) && std::isfinite(number(j, "val_loss"))) {
      evals.push_back({s, number(j, "val_loss"), number(j, "val_bpb"), j.value("step", int64_t(0))});
    } else if (j["type"] == "core" && std::isfinite(s) && std::isfinite(number(j, "core"))) {
      cores.push_back({s, number(j, "core"), j.value("step", int64_t(0))});
    }
  }
}

// The legend, top right.
void draw_legend(profile::Svg& svg) {
  const double lx = kRight - 220;
  svg.line(lx, kTop + 14, lx + 24, kTop + 14, kRawColour, 1);
  svg.text(lx + 30, kTop + 18, "training loss, each step", 11);
  svg.line(lx, kTop + 30, lx + 24, kTop + 30, kTrainColour, 2);
  svg.text(lx + 30, kTop + 34, "its moving average", 11);
  svg.circle(lx + 12, kTop + 46, 4, kValColour, "swatch", "validation loss");
  svg.text(lx + 30, kTop + 50, "validation loss", 11);
}

// CORE over training time in a panel of its own under the loss chart, its last value labelled.
void draw_core_panel(profile::Svg& svg, const std::vector<CorePoint>& cores, const profile::LinearAxis& ax,
                     const std::vector<double>& xt) {
  double lo = 0, hi = 0;  // 0 (chance) always shows
  for (const CorePoint& c : cores) lo = std::min(lo, c.core), hi = std::max(hi, c.core);
  const std::vector<double> yt = profile::nice_ticks(lo, hi > lo ? hi : lo + 0.01, 3);
  const profile::LinearAxis ay{yt.front(), yt.back(), kCoreBottom, kCoreTop};
  for (double v : xt) svg.line(ax(v), kCoreTop, ax(v), kCoreBottom, "#e4e4e4");
  for (double v : yt) {
    svg.line(kLeft, ay(v), kRight, ay(v), "#e4e4e4");
    svg.text(kLeft - 6, ay(v) + 4, strf("%g", v), 11, "end");
  }
  svg.line(kLeft, kCoreBottom, kRight, kCoreBottom, "#000000");
  svg.line(kLeft, kCoreTop, kLeft, kCoreBottom, "#000000");
  svg.text(kLeft - 50, (kCoreTop + kCoreBottom) / 2, "CORE", 12, "middle", "#222222", false, -90);
  std::vector<std::pair<double, double>> pts;
  for (const CorePoint& c : cores) pts.push_back({ax(c.seconds), ay(c.core)});
  if (pts.size() >= 2) svg.polyline(pts, kCoreColour, 2);
  for (const CorePoint& c : cores)
    svg.circle(ax(c.seconds), ay(c.core), 4, kCoreColour, "core",
               strf("step %lld, %.1f s: CORE %.4f", (long long)c.step, c.seconds, c.core));
  const CorePoint& last = cores.back();
  svg.text(ax(last.seconds) - 8, ay(last.core) - 8, strf("CORE %.4f", last.core), 11, "end", kCoreColour, true);
}

}  // namespace

std::string loss_chart_svg(const std::string& metrics, const std::string& title, const std::string& subtitle) {
  std::vector<std::pair<double, double>> train;  // (training seconds, loss)
  std::vector<Eval> evals;
  std::vector<CorePoint> cores;
  read_records(metrics, train, evals, cores);
  profile::Svg svg(kWidth, kBottom + 70 + (cores.empty() ? 0 : kCorePanel));
  svg.text(kLeft, 28, title, 16, "start", "#222222", true);
  svg.text(kLeft, 48, subtitle, 12, "start", "#555555");
  if (train.empty() && evals.empty()) {
    svg.text((kLeft + kRight) / 2, (kTop + kBottom) / 2, "no steps recorded", 14, "middle", "#555555");
    return svg.finish();
  }
  double x_max = 0, y_min = INFINITY, y_max = -INFINITY;
  for (const auto& [s, l] : train) x_max = std::max(x_max, s), y_min = std::min(y_min, l), y_max = std::max(y_max, l);
  for (const Eval& e : evals)
    x_max = std::max(x_max, e.seconds), y_min = std::min(y_min, e.loss), y_max = std::max(y_max, e.loss);
  for (const CorePoint& c : cores) x_max = std::max(x_max, c.seconds);
  const std::vector<double> xt = profile::nice_ticks(0.0, x_max > 0 ? x_max : 1.0, 8);
  const std::vector<double> yt = profile::nice_ticks(y_min, y_max, 6);
  const profile::LinearAxis ax{xt.front(), xt.back(), kLeft, kRight}, ay{yt.front(), yt.back(), kBottom, kTop};
  for (double v : xt) {
    svg.line(ax(v), kTop, ax(v), kBottom, "#e4e4e4");
    svg.text(ax(v), kBottom + 16, strf("%g", v), 11, "middle");
  }
  for (double v : yt) {
    svg.line(kLeft, ay(v), kRight, ay(v), "#e4e4e4");
    svg.text(kLeft - 6, ay(v) + 4, strf("%g", v), 11, "end");
  }
  svg.line(kLeft, kBottom, kRight, kBottom, "#000000");
  svg.line(kLeft, kTop, kLeft, kBottom, "#000000");
  svg.text((kLeft + kRight) / 2, kBottom + 38, "training time (s)", 12, "middle");
  svg.text(kLeft - 50, (kTop + kBottom) / 2, "loss (nats per token)", 12, "middle", "#222222", false, -90);

  // Every step's loss, thin and light; through them a moving average (bias-corrected, over about
  // a tenth of the steps, 30 at most), which shows the trend through the batches' noise.
  // Past kMaxPoints steps both lines keep every stride-th step and the last (a long run of a tiny
  // model has tens of thousands: a file of megabytes, with no more to see).
  std::vector<std::pair<double, double>> raw, smooth;
  const double beta = train.size() < 20 ? 0.0 : 1.0 - 1.0 / std::min(30.0, double(train.size()) / 10.0);
  const size_t stride = (train.size() + kMaxPoints - 1) / kMaxPoints;
  double ema = 0, weight = 0;
  for (size_t i = 0; i < train.size(); ++i) {
    const auto [s, l] = train[i];
    ema = beta * ema + (1 - beta) * l, weight = beta * weight + (1 - beta);
    if (i % stride != 0 && i + 1 != train.size()) continue;
    raw.push_back({ax(s), ay(l)});
    smooth.push_back({ax(s), ay(ema / weight)});
  }
  if (!raw.empty()) {
    svg.polyline(raw, kRawColour, 1);
    svg.polyline(smooth, kTrainColour, 2);
  }
  for (const Eval& e : evals) {
    svg.circle(ax(e.seconds), ay(e.loss), 4, kValColour, "eval",
               strf("step %lld, %.1f s: val loss %.4f", (long long)e.step, e.seconds, e.loss) +
                   (std::isfinite(e.bpb) ? strf(", val_bpb %.4f", e.bpb) : ""));
  }
  if (!evals.empty() && std::isfinite(evals.back().bpb)) {
    // The last evaluation's score, on a white ground over the curves beside it.
    const Eval& e = evals.back();
    const std::string label = strf("val_bpb %.4f", e.bpb);
    const double w = 7.0 * double(label.size()), x1 = ax(e.seconds) - 8, y1 = ay(e.loss) - 10;
    svg.rect(x1 - w - 2, y1 - 12, w + 4, 16, "#ffffff");
    svg.text(x1, y1, label, 11, "end", kValColour, true);
  }
  draw_legend(svg);
  if (!cores.empty()) draw_core_panel(svg, cores, ax, xt);
  return svg.finish();
}

}  // namespace nt
