// SPDX-License-Identifier: MIT
// nanotrain: one binary, subcommands. Turns errors into one line on stderr and a non-zero exit.
#include <cstdio>

#include "cli/commands.h"
#include "core/check.h"
#include "core/system.h"
#include "dist/comm.h"
#include "train/signals.h"

namespace {

int run_app(int argc, char** argv) {
  CLI::App app{"nanotrain: train small GPT models from scratch under a wall-clock budget"};
  nt::cli::add_all_commands(app);
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
  } catch (const std::exception& e) {
    // The standard library's own errors (std::filesystem names the path): still one line.
    std::fprintf(stderr, "nanotrain: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  nt::route_stop_signals_to_one_thread();
  nt::keep_freed_memory();
  const int rc = run_app(argc, argv);
  // An error on one rank of a job over several processes ends them all (the others would wait
  // for it); a finished or interrupted job, where every rank stops at the same step, ends cleanly.
  if (rc == 1 || rc == 2) nt::dist::abort_job(rc);
  try {
    nt::dist::finalize();
  } catch (const nt::Error& e) {
    std::fprintf(stderr, "nanotrain: error: %s\n", e.what());
    nt::dist::abort_job(1);
    return 1;
  }
  return rc;
}
