// SPDX-License-Identifier: MIT
#include "cli/train_flags.h"

#include <algorithm>

#include "cli/field_options.h"
#include "core/check.h"

namespace nt::cli {

TrainConfig train_config_from_args(const std::vector<std::string>& args, const std::string& what) {
  TrainConfig cfg;
  CLI::App app{"train flags"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_field_options(&app, cfg);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a vector from its back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    fail("%s: %s", what.c_str(), e.what());
  }
  if (!app.remaining().empty()) fail("%s: unexpected argument %s", what.c_str(), app.remaining().front().c_str());
  try {
    cfg.validate();
  } catch (const Error& e) {
    fail("%s: %s", what.c_str(), e.what());
  }
  return cfg;
}

std::vector<std::string> given_args(const CLI::App& app, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    if (o->count() == 0 || std::find(names.begin(), names.end(), o->get_name()) == names.end()) continue;
    const bool flag = o->get_expected_max() == 0;
    for (const std::string& r : o->results()) {
      if (flag)
        out.push_back(r == "false" || r == "0" ? o->get_name() + "=false" : o->get_name());
      else
        out.push_back(o->get_name() + "=" + r);
    }
  }
  return out;
}

std::vector<std::string> train_flag_names() {
  TrainConfig cfg;
  CLI::App app;
  add_field_options(&app, cfg);
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options())
    if (o->get_name() != "--help") out.push_back(o->get_name());
  return out;
}

}  // namespace nt::cli
