// SPDX-License-Identifier: MIT
// A settings struct's command-line options, made from its for_each_field list (core/fields.h).
#pragma once
#include <charconv>
#include <string>
#include <type_traits>

#include <CLI/CLI.hpp>

#include "core/fields.h"

namespace nt::cli {

// Sizes given on the command line must be positive (a stored 0 means "the default").
inline const CLI::Validator& positive_validator() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        long long x = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), x);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return "";  // the integer conversion reports it
        return x > 0 ? std::string() : s + ": must be positive";
      },
      "> 0");
  return v;
}

// Unsigned values (seeds) must be written as plain digits that fit: CLI11 would wrap "-1" around.
inline const CLI::Validator& unsigned_validator() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        unsigned long long x = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), x);
        if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return "";
        return s + ": expected a whole number from 0 to 18446744073709551615";
      },
      ">= 0");
  return v;
}

// Real numbers are written in decimal (CLI11 would also take C's hexadecimal floats, "0x10").
inline const CLI::Validator& decimal_validator() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        return s.find_first_of("xX") == std::string::npos ? std::string() : s + ": expected a decimal number";
      },
      "");
  return v;
}

struct OptionStyle {
  bool checks = true;   // apply cli_positive
  bool groups = true;   // put options in their --help sections
  // Flags left out, and help text replaced, where a command shows a struct differently.
  std::vector<std::string> skip;
  std::vector<std::pair<std::string, std::string>> help;
};

// Adds an option (a flag for bools) for every field of `s` that has a flag; `s` must outlive
// the parse.
template <HasFields S>
void add_field_options(CLI::App* app, S& s, const OptionStyle& style = {}, const char* group = nullptr) {
  s.for_each_field([&](auto& value, const FieldInfo& f) {
    using T = std::remove_cvref_t<decltype(value)>;
    const char* g = f.group ? f.group : group;
    if constexpr (HasFields<T>) {
      add_field_options(app, value, style, g);
    } else {
      if (!f.flag) return;
      for (const auto& name : style.skip)
        if (name == f.flag) return;
      std::string help = f.help;
      for (const auto& [name, text] : style.help)
        if (name == f.flag) help = text;
      CLI::Option* o = nullptr;
      if constexpr (std::is_same_v<T, bool>) o = app->add_flag(f.flag, value, help);
      else o = app->add_option(f.flag, value, help);
      if (f.show_default) o->capture_default_str();
      if (f.cli_positive && style.checks) o->check(positive_validator());
      if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>)
        o->check(unsigned_validator());
      if constexpr (std::is_floating_point_v<T>) o->check(decimal_validator());
      if (f.required) o->required();
      if (g && style.groups) o->group(g);
    }
  });
}

// The flags of `s` marked resume_may_change.
template <HasFields S>
std::vector<std::string> resume_flags(S& s) {
  std::vector<std::string> out;
  s.for_each_field([&](auto& value, const FieldInfo& f) {
    if constexpr (HasFields<std::remove_cvref_t<decltype(value)>>) {
      for (auto& x : resume_flags(value)) out.push_back(x);
    } else if (f.flag && f.resume_may_change) {
      out.push_back(f.flag);
    }
  });
  return out;
}

}  // namespace nt::cli
