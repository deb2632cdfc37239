// SPDX-License-Identifier: MIT
// Command-line parsing: the real CLI11 app with every subcommand and flag, built as
// src/cli/main.cc builds it, parsing fuzzed argv (arguments separated by NUL bytes). Subcommand
// callbacks (which would train, sample, ...) are taken out before parsing, so only parsing and
// the flags' own conversions and checks run. They are kept alive meanwhile: each owns the
// storage its flags write into.
#include <vector>

#include "cli/commands.h"
#include "fuzz_util.h"

namespace {
// CLI11 has no getter for a command's callbacks; a pointer to the protected members, formed
// through a derived class, reads them without any cast.
struct CallbackAccess : CLI::App {
  static constexpr auto kFinal = &CallbackAccess::final_callback_;
  static constexpr auto kParseComplete = &CallbackAccess::parse_complete_callback_;
};

void take_callbacks(CLI::App* app, std::vector<std::function<void()>>& kept) {
  kept.push_back(std::move(app->*CallbackAccess::kFinal));
  kept.push_back(std::move(app->*CallbackAccess::kParseComplete));
  app->callback(std::function<void()>());
  app->parse_complete_callback(std::function<void()>());
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) take_callbacks(sub, kept);
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
  std::vector<std::function<void()>> kept;  // destroyed after `app`'s parse, below
  take_callbacks(&app, kept);
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::Error&) {
  } catch (const nt::Error&) {
  }
  return 0;
}
