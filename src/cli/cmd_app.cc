// SPDX-License-Identifier: MIT
// The whole command line in one place: used by main.cc and by the CLI fuzzer, so they parse
// exactly the same flags.
#include "cli/commands.h"

namespace nt::cli {

void add_all_commands(CLI::App& app) {
  app.set_version_flag("--version", std::string("nanotrain ") + NT_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  add_train_command(app);
  add_sample_command(app);
  add_eval_command(app);
  add_data_command(app);
  add_tokenizer_command(app);
  add_info_command(app);
  add_bench_command(app);
  add_sweep_command(app);
  add_runs_command(app);
  add_plot_command(app);
  add_plan_command(app);
}

}  // namespace nt::cli
