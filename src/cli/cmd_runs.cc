// SPDX-License-Identifier: MIT
// `nanotrain runs`: the leaderboard of any set of run folders (experiment/leaderboard.h).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/leader_options.h"
#include "core/check.h"
#include "experiment/leaderboard.h"
#include "experiment/leaderboard_format.h"

namespace nt::cli {

namespace {

struct RunsFlags {
  std::vector<std::string> paths{"runs"}, where;
  std::string sort = "val_bpb";
  bool per_run = false, json = false, markdown = false;
};

}  // namespace

void add_runs_command(CLI::App& app) {
  auto f = std::make_shared<RunsFlags>();
  auto* c = app.add_subcommand(
      "runs",
      "Leaderboard of run folders: sorted by val_bpb, with the settings that differ between runs, tokens, tokens/s, "
      "MFU, parameters, and mean ± spread over runs that differ only by seed. Unfinished and broken runs are listed "
      "with their state. Exit codes: 0 ok, 1 bad input, 2 usage");
  c->add_option("paths", f->paths, "Run folders, or folders to search for them (three levels deep)")
      ->capture_default_str();
  c->add_option("--where", f->where,
                "Only runs whose setting KEY is VALUE (KEY=V1,V2 for any of several; "
                "KEY may also be state or name); repeatable, all must hold");
  c->add_option("--sort", f->sort, "val_bpb | core | tokens_per_second | name")->capture_default_str();
  c->add_flag("--per-run", f->per_run, "One row per run (no grouping of seeds)");
  c->add_flag("--json", f->json, "JSON (schema nanotrain-runs/1, docs/EXPERIMENTS.md)");
  c->add_flag("--markdown", f->markdown, "A Markdown table");
  c->callback([f] {
    if (f->json && f->markdown) fail("--json and --markdown: choose one");
    const experiment::LeaderOptions lo = leader_options(f->where, f->sort, f->per_run);
    const experiment::Leaderboard lb = experiment::make_leaderboard(experiment::load_runs(f->paths), lo);
    if (f->json)
      std::printf("%s\n", experiment::leaderboard_json(lb).dump(2).c_str());
    else if (f->markdown)
      std::printf("%s", experiment::leaderboard_markdown(lb).c_str());
    else
      std::printf("%s", experiment::leaderboard_text(lb).c_str());
  });
}

}  // namespace nt::cli
