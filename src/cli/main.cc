// SPDX-License-Identifier: MIT
// nanotrain: one binary, subcommands. Turns errors into one line on stderr and a non-zero exit.
#include <cstdio>

#include "cli/commands.h"
#include "core/check.h"

int main(int argc, char** argv) {
  CLI::App app{"nanotrain: train small GPT models from scratch under a wall-clock budget"};
  app.set_version_flag("--version", std::string("nanotrain ") + NT_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  nt::cli::add_train_command(app);
  nt::cli::add_sample_command(app);
  nt::cli::add_eval_command(app);
  nt::cli::add_data_command(app);
  nt::cli::add_tokenizer_command(app);
  nt::cli::add_info_command(app);
  nt::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "nanotrain: error: %s (see --help)\n", e.what());
    return 2;
  } catch (const nt::Error& e) {
    std::fprintf(stderr, "nanotrain: error: %s\n", e.what());
    return 1;
  } catch (const nt::cli::ExitCode& e) {
    return e.code;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "nanotrain: error: out of memory\n");
    return 1;
  }
  return 0;
}
