// SPDX-License-Identifier: MIT
// The profile's table as a picture: one horizontal bar per phase (forward, backward, optimizer,
// ...) and, indented under it, one per op kind inside it, as long as its share of the step.
#include <algorithm>
#include <cmath>
#include <string>

#include "profile/profile.h"
#include "core/check.h"
#include "profile/svg.h"

namespace nt::profile {

namespace {

constexpr double kWidth = 980, kLabelRight = 250, kBarLeft = 262, kBarWidth = 500, kTop = 92, kRow = 18;

// A phase's colour for its own bar, and a lighter one for its ops' bars.
struct Colours {
  const char *phase, *op;
};
Colours colours(Id phase) {
  switch (phase) {
    case kForward: return {"#1f77b4", "#aec7e8"};
    case kBackward: return {"#d62728", "#ff9896"};
    case kOptimizer: return {"#2ca02c", "#98df8a"};
    case kData: return {"#9467bd", "#c5b0d5"};
    case kEval: return {"#8c564b", "#c49c94"};
    case kCheckpoint: return {"#7f7f7f", "#c7c7c7"};
    default: return {"#bcbd22", "#dbdb8d"};  // ops outside any phase
  }
}

}  // namespace

std::string chart_svg(const std::string& title, const std::string& subtitle) {
  const Totals t = totals();
  const double base = t.base_ms();
  // The bars' scale: the largest share, rounded up to a whole 10 %, is the full width.
  double top_share = 0.1;
  for (const ZoneTotal& z : t.rows) top_share = std::max(top_share, z.ms / base);
  top_share = std::min(1.0, std::ceil(top_share * 10.0 - 1e-9) / 10.0);
  auto bar = [&](double share) { return kBarWidth * share / top_share; };

  const double height = kTop + kRow * double(t.rows.size()) + 44;
  Svg svg(kWidth, height);
  svg.text(20, 28, title, 16, "start", "#222222", true);
  svg.text(20, 48, subtitle, 12, "start", "#555555");
  // Gridlines every 10 % of the step.
  for (int g = 0; g <= int(top_share * 10.0 + 0.5); ++g) {
    const double x = kBarLeft + bar(g / 10.0);
    svg.line(x, kTop - 14, x, kTop + kRow * double(t.rows.size()), "#e4e4e4");
    svg.text(x, kTop - 18, strf("%.0f %%", 10.0 * g), 10, "middle", "#555555");
  }
  double y = kTop;
  for (const ZoneTotal& z : t.rows) {
    const bool own = z.id == z.phase;  // a phase's own row
    const Colours c = colours(z.phase);
    const double share = z.ms / base;
    const std::string value = t.steps > 0 ? strf("%.1f ms a step, %.1f %%", z.ms / double(t.steps), 100.0 * share)
                                          : strf("%.1f ms, %.1f %%", z.ms, 100.0 * share);
    svg.text(kLabelRight, y + 12, name(z.id), 11, "end", "#222222", own);  // phases bold
    const std::string where = z.phase == kStep || own ? "" : std::string(name(z.phase)) + " / ";
    // (Work outside the steps, such as evaluation, can exceed them: its bar stops at the full
    // width with a break drawn across its end.)
    const double w = std::max(1.0, bar(std::min(share, top_share)));
    svg.rect(kBarLeft, y + 2, w, kRow - 4, own ? c.phase : c.op,
             where + name(z.id) + ": " + value + ", " + std::to_string(z.calls) + " calls");
    if (share > top_share) {
      svg.line(kBarLeft + w - 12, y + kRow - 2, kBarLeft + w - 6, y + 2, "#ffffff", 2);
      svg.line(kBarLeft + w - 7, y + kRow - 2, kBarLeft + w - 1, y + 2, "#ffffff", 2);
    }
    svg.text(kBarLeft + w + 6, y + 12, value, 10, "start", "#444444");
    y += kRow;
  }
  svg.text(20, y + 28,
           "Bars: share of the time in steps (of the wall time when no step ran). Each phase in bold, then the op "
           "kinds inside it, lighter.",
           10, "start", "#555555");
  return svg.finish();
}

}  // namespace nt::profile
