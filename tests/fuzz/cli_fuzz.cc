// SPDX-License-Identifier: MIT
// Command-line parsing: the real CLI11 app with every subcommand and flag, built as
// src/cli/main.cc builds it, parsing fuzzed argv (arguments separated by NUL bytes). Subcommand
// callbacks (which would train, sample, ...) are removed, so only parsing and the flags' own
// conversions and checks run.
#include <vector>

#include "cli/commands.h"
#include "fuzz_util.h"

namespace {
void drop_callbacks(CLI::App* app) {
  app->callback(std::function<void()>());
  app->parse_complete_callback(std::function<void()>());
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) drop_callbacks(sub);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"nanotrain"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) args.push_back(cur), cur.clear();
    else cur += char(data[i]);
  }
  args.push_back(cur);
  if (args.size() > 64) return 0;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());

  CLI::App app{"nanotrain"};
  nt::cli::add_all_commands(app);
  drop_callbacks(&app);
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::Error&) {
  } catch (const nt::Error&) {
  }
  return 0;
}
