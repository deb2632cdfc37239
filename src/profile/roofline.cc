// SPDX-License-Identifier: MIT
#include "profile/roofline.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"
#include "profile/svg.h"

namespace nt::profile {

RoofPlacement place(const Roofs& roofs, const KernelRate& k) {
  NT_CHECK(roofs.fp32_gflops > 0 && roofs.bf16_gflops > 0 && roofs.gbs > 0, "roofline: roofs must be positive");
  NT_CHECK(k.seconds > 0 && k.bytes > 0 && k.flops >= 0 && k.peak_gflops > 0,
           "roofline: %s needs positive time, bytes and peak", k.name.c_str());
  RoofPlacement p;
  p.gbs = k.bytes / k.seconds * 1e-9;
  if (k.flops == 0) {  // data movement: only the bandwidth roof applies
    p.pct_roof = 100.0 * p.gbs / roofs.gbs;
    return p;
  }
  p.intensity = k.flops / k.bytes;
  p.gflops = k.flops / k.seconds * 1e-9;
  const double memory_roof = p.intensity * roofs.gbs;
  p.memory_bound = memory_roof < k.peak_gflops;
  p.roof_gflops = std::min(memory_roof, k.peak_gflops);
  p.pct_roof = 100.0 * p.gflops / p.roof_gflops;
  return p;
}

namespace {

constexpr double kWidth = 1140, kPlotLeft = 90, kPlotRight = 660, kPlotTop = 84, kPlotBottom = 564;
constexpr double kLegendX = 690, kLine = 15;
constexpr const char* kFp32Colour = "#1f77b4";
constexpr const char* kBf16Colour = "#ff7f0e";
constexpr const char* kRoofColour = "#444444";

// A tick label: 0.01, 0.1, 1, 10, ... 1e+06.
std::string tick(double v) { return v >= 1e5 || v < 1e-3 ? strf("%.0e", v) : strf("%g", v); }

}  // namespace

std::string roofline_svg(const Roofs& roofs, const std::vector<KernelRate>& kernels, const std::string& title,
                         const std::string& subtitle) {
  struct Point {
    const KernelRate* k;
    RoofPlacement p;
  };
  std::vector<Point> points, movers;
  for (const KernelRate& k : kernels) (k.flops > 0 ? points : movers).push_back({&k, place(roofs, k)});

  // Axes: every point and both ridges (where the bandwidth roof meets a compute roof), whole decades.
  const double peak_hi = std::max(roofs.fp32_gflops, roofs.bf16_gflops);
  double x_min = roofs.fp32_gflops / roofs.gbs, x_max = peak_hi / roofs.gbs;
  double y_min = roofs.fp32_gflops, y_max = peak_hi;
  for (const Point& q : points) {
    x_min = std::min(x_min, q.p.intensity), x_max = std::max(x_max, q.p.intensity);
    y_min = std::min(y_min, q.p.gflops), y_max = std::max(y_max, q.p.gflops);
  }
  const double x_lo = decade_below(x_min), y_lo = decade_below(y_min);
  const double x_hi = std::max(decade_above(x_max * 1.5), x_lo * 10);
  const double y_hi = std::max(decade_above(y_max * 1.5), y_lo * 10);
  const LogAxis ax{x_lo, x_hi, kPlotLeft, kPlotRight}, ay{y_lo, y_hi, kPlotBottom, kPlotTop};

  const double legend_lines = double(points.size() + (movers.empty() ? 0 : movers.size() + 2) + 2);
  const double height = std::max(kPlotBottom + 84, kPlotTop + kLine * legend_lines + 20);
  Svg svg(kWidth, height);
  svg.text(kPlotLeft, 28, title, 16, "start", "#222222", true);
  svg.text(kPlotLeft, 48, subtitle, 12, "start", "#555555");

  // Grid and ticks at every decade.
  const long x_decades = std::lround(std::log10(x_hi / x_lo)), y_decades = std::lround(std::log10(y_hi / y_lo));
  NT_CHECK(x_decades > 0 && x_decades < 40 && y_decades > 0 && y_decades < 40, "roofline: axes of %ld x %ld decades",
           x_decades, y_decades);
  for (long d = 0; d <= x_decades; ++d) {
    const double v = x_lo * std::pow(10.0, double(d));
    svg.line(ax(v), kPlotTop, ax(v), kPlotBottom, "#dddddd");
    svg.text(ax(v), kPlotBottom + 16, tick(v), 11, "middle");
  }
  for (long d = 0; d <= y_decades; ++d) {
    const double v = y_lo * std::pow(10.0, double(d));
    svg.line(kPlotLeft, ay(v), kPlotRight, ay(v), "#dddddd");
    svg.text(kPlotLeft - 6, ay(v) + 4, tick(v), 11, "end");
  }
  svg.line(kPlotLeft, kPlotBottom, kPlotRight, kPlotBottom, "#000000");
  svg.line(kPlotLeft, kPlotTop, kPlotLeft, kPlotBottom, "#000000");
  svg.text((kPlotLeft + kPlotRight) / 2, kPlotBottom + 40, "arithmetic intensity (FLOP per byte of compulsory traffic)",
           12, "middle");
  svg.text(kPlotLeft - 52, (kPlotTop + kPlotBottom) / 2, "GFLOP/s", 12, "middle", "#222222", false, -90);

  // Labels (the roofs', the points' numbers) go where they overlap no point and no label placed
  // before them, the first clear one of a few places; a number that finds none is left out (the
  // point's tooltip and the legend still name it).
  struct Box {
    double x0, y0, x1, y1;
    bool meets(const Box& o) const { return !(x1 < o.x0 || o.x1 < x0 || y1 < o.y0 || o.y1 < y0); }
  };
  std::vector<Box> taken;
  for (const Point& q : points) {
    const double cx = ax(q.p.intensity), cy = ay(q.p.gflops);
    taken.push_back({cx - 4, cy - 4, cx + 4, cy + 4});
  }
  auto clear = [&](const Box& b) {
    if (b.x0 < kPlotLeft || b.x1 > kPlotRight || b.y0 < kPlotTop || b.y1 > kPlotBottom) return false;
    for (const Box& t : taken)
      if (b.meets(t)) return false;
    return true;
  };
  constexpr double kCharWidth = 6.0;  // at font size 10-11: enough for a label's box

  // The roofs: the bandwidth's diagonal up to the higher ridge, then each compute peak flat,
  // labelled above or below the line at its right or left end.
  const double x_start = std::max(x_lo, y_lo / roofs.gbs), x_ridge_hi = peak_hi / roofs.gbs;
  svg.polyline({{ax(x_start), ay(x_start * roofs.gbs)}, {ax(x_ridge_hi), ay(peak_hi)}}, kRoofColour, 2);
  auto flat_roof = [&](double peak, const char* what, const char* colour) {
    const double x0 = ax(std::max(x_lo, peak / roofs.gbs)), yl = ay(peak);
    svg.line(x0, yl, kPlotRight, yl, colour, 2);
    const std::string label = strf("%s %.0f GF/s", what, peak);
    const double w = kCharWidth * double(label.size());
    const Box tries[4] = {{kPlotRight - 4 - w, yl - 15, kPlotRight - 4, yl - 4},
                          {kPlotRight - 4 - w, yl + 3, kPlotRight - 4, yl + 14},
                          {x0 + 8, yl - 15, x0 + 8 + w, yl - 4},
                          {x0 + 8, yl + 3, x0 + 8 + w, yl + 14}};
    Box b = tries[0];
    for (const Box& t : tries)
      if (clear(t)) {
        b = t;
        break;
      }
    taken.push_back(b);
    svg.text(b.x0, b.y1 - 1, label, 10, "start", colour);
  };
  flat_roof(roofs.fp32_gflops, "fp32 peak", kFp32Colour);
  if (roofs.bf16_gflops > roofs.fp32_gflops * 1.01) flat_roof(roofs.bf16_gflops, "bf16 peak", kBf16Colour);
  {
    // The diagonal's label, along it (above it, rotated), at the first clear one of a few places
    // between where it starts and the fp32 ridge.
    const double xa = x_start, xb = roofs.fp32_gflops / roofs.gbs;
    const double angle = std::atan2(ay(xb * roofs.gbs) - ay(xa * roofs.gbs), ax(xb) - ax(xa));
    const std::string label = strf("memory %.1f GB/s (triad)", roofs.gbs);
    const double len = kCharWidth * double(label.size());
    const double dx = std::cos(angle) * len / 2, dy = std::sin(angle) * len / 2;
    // off: the baseline's distance from the line, below it (positive; kernels bound by the
    // bandwidth sit there, further right) or above it (negative; kernels that ran from the caches).
    auto at = [&](double frac, double off, double& px, double& py) {
      const double xm = xa * std::pow(xb / xa, frac);
      px = ax(xm) - off * std::sin(angle), py = ay(xm * roofs.gbs) + off * std::cos(angle);
      return Box{std::min(px - dx, px + dx), std::min(py - dy, py + dy) - 8, std::max(px - dx, px + dx),
                 std::max(py - dy, py + dy) + 4};
    };
    double px = 0, py = 0;
    Box chosen = at(0.3, 14, px, py);
    bool found = false;
    for (double off : {14.0, -6.0})
      for (double frac : {0.3, 0.2, 0.4, 0.5, 0.6, 0.7, 0.1}) {
        double qx = 0, qy = 0;
        const Box b = at(frac, off, qx, qy);
        if (!found && clear(b)) chosen = b, px = qx, py = qy, found = true;
      }
    taken.push_back(chosen);
    svg.text(px, py, label, 11, "middle", kRoofColour, false, angle * 180.0 / std::numbers::pi);
  }

  // The points, numbered as in the legend.
  auto place_number = [&](double cx, double cy, const std::string& n) {
    const double w = kCharWidth * double(n.size()), h = 10;
    const double corners[4][2] = {{6, -4}, {6, 11}, {-6 - w, -4}, {-6 - w, 11}};  // the text's baseline-left
    for (const auto& c : corners) {
      const Box b{cx + c[0], cy + c[1] - h, cx + c[0] + w, cy + c[1]};
      if (!clear(b)) continue;
      taken.push_back(b);
      svg.text(b.x0, b.y1, n, 10);
      return;
    }
  };
  svg.text(kLegendX, kPlotTop, "kernels: % of the roof at their intensity", 12, "start", "#222222", true);
  double y = kPlotTop + kLine * 1.5;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& q = points[i];
    const char* colour = q.k->bf16 ? kBf16Colour : kFp32Colour;
    const double cx = ax(q.p.intensity), cy = ay(q.p.gflops);
    const std::string n = std::to_string(i + 1);
    svg.circle(cx, cy, 4, colour, "kernel",
               strf("%s. %s: %.1f GFLOP/s at %.3g FLOP/B, %.0f %% of the %s roof", n.c_str(), q.k->name.c_str(),
                    q.p.gflops, q.p.intensity, q.p.pct_roof, q.p.memory_bound ? "bandwidth" : "compute"));
    place_number(cx, cy, n);
    svg.circle(kLegendX + 5, y - 4, 4, colour, "swatch", q.k->name);
    svg.text(kLegendX + 14, y,
             strf("%s  %s  %.0f %%%s", n.c_str(), q.k->name.c_str(), q.p.pct_roof, q.p.memory_bound ? " (mem)" : ""),
             11);
    y += kLine;
  }
  if (!movers.empty()) {
    y += kLine / 2;
    svg.text(kLegendX, y, "data movement only (not on the chart): % of the bandwidth", 12, "start", "#222222", true);
    y += kLine;
    for (const Point& q : movers) {
      svg.text(kLegendX + 14, y, strf("%s  %.0f %%", q.k->name.c_str(), q.p.pct_roof), 11);
      y += kLine;
    }
  }
  svg.text(kPlotLeft, kPlotBottom + 58, "blue: fp32 kernels, against the fp32 peak; orange: bf16 kernels, against the "
           "bf16 peak.", 10, "start", "#555555");
  svg.text(kPlotLeft, kPlotBottom + 72, "(mem): the bandwidth is the lower roof at its intensity. Above that roof, a "
           "kernel's operands came from the caches.", 10, "start", "#555555");
  return svg.finish();
}

}  // namespace nt::profile
