// SPDX-License-Identifier: MIT
#include "experiment/plots.h"

#include <filesystem>

#include "core/check.h"
#include "core/files.h"
#include "experiment/charts.h"

namespace nt::experiment {

namespace {

std::string subtitle(const Leaderboard& lb) {
  return strf("%zu runs in %zu series; bands and bars span each series' seeds", lb.runs.size(), lb.rows.size());
}

std::vector<CurveSeries> curves(const Leaderboard& lb, bool loss) {
  std::vector<CurveSeries> out;
  for (const LeaderRow& row : lb.rows) {
    CurveSeries s{row.label, {}};
    for (size_t i : row.runs) s.runs.push_back(loss ? lb.runs[i].loss : lb.runs[i].val_bpb_curve);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ScatterSeries> finals(const Leaderboard& lb, bool against_params) {
  std::vector<ScatterSeries> out;
  for (const LeaderRow& row : lb.rows) {
    ScatterSeries s{row.label, {}, {}};
    for (size_t i : row.runs) {
      const RunRecord& r = lb.runs[i];
      if (r.state != RunState::kDone) continue;
      s.points.push_back({against_params ? double(r.params) : r.tokens_per_second, r.val_bpb});
      s.names.push_back(r.name);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> comparison_charts(const Leaderboard& lb) {
  const std::string sub = subtitle(lb);
  const std::string bpb = "val_bpb (bits per byte)", loss = "training loss (nats per token)";
  const auto val = curves(lb, false), train = curves(lb, true);
  return {
      {"val_bpb_vs_time.svg",
       curve_chart_svg({"val_bpb against training time", sub, bpb}, val, CurveX::kSeconds, false)},
      {"val_bpb_vs_tokens.svg",
       curve_chart_svg({"val_bpb against tokens trained", sub, bpb}, val, CurveX::kTokens, false)},
      {"loss_vs_time.svg", curve_chart_svg({"training loss against training time (moving average)", sub, loss}, train,
                                           CurveX::kSeconds, true)},
      {"loss_vs_tokens.svg", curve_chart_svg({"training loss against tokens trained (moving average)", sub, loss},
                                             train, CurveX::kTokens, true)},
      {"val_bpb_vs_params.svg",
       scatter_chart_svg({"final val_bpb against model size", sub, bpb}, "parameters", finals(lb, true))},
      {"val_bpb_vs_throughput.svg", scatter_chart_svg({"final val_bpb against training throughput", sub, bpb},
                                                      "tokens per second", finals(lb, false))},
  };
}

std::vector<std::string> write_plots(const Leaderboard& lb, const std::string& out) {
  make_dirs(out);
  const auto charts = comparison_charts(lb);
  std::vector<std::string> written;
  for (const auto& [name, svg] : charts) {
    const std::string path = (std::filesystem::path(out) / name).string();
    write_file_atomic(path, svg);
    written.push_back(path);
  }
  const std::string report = (std::filesystem::path(out) / "report.html").string();
  write_file_atomic(report, report_html(lb, charts));
  written.push_back(report);
  return written;
}

}  // namespace nt::experiment
