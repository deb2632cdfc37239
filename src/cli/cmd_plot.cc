// SPDX-License-Identifier: MIT
// `nanotrain plot`: comparison charts and report.html of a set of runs (experiment/plots.h).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/leader_options.h"
#include "core/check.h"
#include "experiment/leaderboard.h"
#include "experiment/plots.h"

namespace nt::cli {

namespace {

struct PlotFlags {
  std::vector<std::string> paths, where;
  std::string out, sort = "val_bpb";
  bool per_run = false, json = false;
};

}  // namespace

void add_plot_command(CLI::App& app) {
  auto f = std::make_shared<PlotFlags>();
  auto* c = app.add_subcommand(
      "plot",
      "SVG charts of a set of runs (val_bpb and training loss against training time and tokens; final val_bpb against "
      "parameters and tokens/s; one colour per setting, seeds as bands) and a self-contained report.html. Exit codes: "
      "0 ok, 1 bad input, 2 usage");
  c->add_option("paths", f->paths, "Run folders or sweep folders (searched three levels deep)")->required();
  c->add_option("--out", f->out, "Folder for the charts and report.html")->required();
  c->add_option("--where", f->where, "Only runs whose setting KEY is VALUE (as in `nanotrain runs`); repeatable");
  c->add_option("--sort", f->sort, "Order of the series: val_bpb | core | tokens_per_second | name")
      ->capture_default_str();
  c->add_flag("--per-run", f->per_run, "One series per run (no grouping of seeds)");
  c->add_flag("--json", f->json, "Print the files written as JSON ({\"files\": [...]})");
  c->callback([f] {
    const experiment::LeaderOptions lo = leader_options(f->where, f->sort, f->per_run);
    const experiment::Leaderboard lb = experiment::make_leaderboard(experiment::load_runs(f->paths, true), lo);
    const std::vector<std::string> files = experiment::write_plots(lb, f->out);
    if (f->json) {
      std::printf("%s\n", nlohmann::json{{"files", files}, {"runs", lb.runs.size()}}.dump(2).c_str());
    } else {
      std::printf("%zu runs in %zu series:\n", lb.runs.size(), lb.rows.size());
      for (const std::string& p : files) std::printf("  %s\n", p.c_str());
    }
  });
}

}  // namespace nt::cli
