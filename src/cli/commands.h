// SPDX-License-Identifier: MIT
// Each subcommand lives in its own cmd_*.cc and registers itself on the root app here.
// Callbacks report user errors by throwing nt::Error; main.cc prints them as one line.
#pragma once
#include <CLI/CLI.hpp>

namespace nt::cli {

// Every subcommand below, plus --version and the root app's rules (main.cc and the fuzzer).
void add_all_commands(CLI::App& app);

void add_train_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_eval_core_command(CLI::App& eval);  // `eval core`, under `eval`
void add_data_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_runs_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_plan_command(CLI::App& app);

// Thrown by a command to end the process with a specific exit code after a clean stop.
struct ExitCode {
  int code;
};

}  // namespace nt::cli
