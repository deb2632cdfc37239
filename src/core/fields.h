// SPDX-License-Identifier: MIT
// Settings declared once. A settings struct lists its fields in a member template
//   template <class V> void for_each_field(V&& v) { v(depth, {.key = "depth", .flag = "--depth", ...}); ... }
// and generic code derives from that list its JSON (fields_to_json / fields_from_json), its
// validation (validate_fields) and its command-line options (cli/field_options.h). A field
// whose type has its own for_each_field is a nested part: its fields follow under its key.
#pragma once
#include <cmath>
#include <concepts>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace nt {

struct FieldInfo {
  const char* key = nullptr;    // JSON key; nullptr: not stored
  const char* flag = nullptr;   // command-line flag; nullptr: none
  const char* help = "";
  const char* group = nullptr;  // --help section; a nested part's fields inherit it
  bool show_default = false;    // --help prints the default
  bool cli_positive = false;    // the command line refuses <= 0 (a stored 0 means "the default")
  bool required = false;        // the command line must give it
  bool optional = false;        // older JSON may lack it: the default is kept
  bool resume_may_change = false;  // may be given again with --resume (not part of the run's identity)
  // Numbers: valid in [min, max] (max excluded when max_open; NaN never valid), else
  // "<flag> <value>: <error>". Values below 0 pass when negative_is_default.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false, finite = false, negative_is_default = false;
  const char* error = nullptr;  // nullptr: no range check
  const char* choices = nullptr;  // strings: the valid values, separated by spaces
  // Strings: a check of its own (it fails naming the flag), e.g. an interval's syntax.
  void (*check)(const char* flag, const std::string& value) = nullptr;
};

template <class T>
concept HasFields = requires(T& t) { t.for_each_field([](auto&, const FieldInfo&) {}); };

// The value as messages print it: integers in full, reals as %g.
template <class T>
std::string field_value_text(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return v;
  else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return strf("%g", double(v));
}

// "a or b", "a, b or c" from "a b c".
inline std::string choices_text(const char* choices) {
  std::string out, word;
  std::vector<std::string> words;
  for (const char* p = choices;; ++p) {
    if (*p == ' ' || *p == 0) {
      if (!word.empty()) words.push_back(word), word.clear();
      if (*p == 0) break;
    } else {
      word += *p;
    }
  }
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

inline bool is_choice(const char* choices, const std::string& v) {
  const size_t n = std::strlen(choices);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && choices[j] != ' ') ++j;
    if (v.size() == j - i && v.compare(0, v.size(), choices + i, j - i) == 0) return true;
    i = j + 1;
  }
  return false;
}

template <HasFields S>
nlohmann::json fields_to_json(const S& s) {
  nlohmann::json j = nlohmann::json::object();
  const_cast<S&>(s).for_each_field([&](auto& value, const FieldInfo& f) {  // the visit only reads
    if (!f.key) return;
    if constexpr (HasFields<std::remove_cvref_t<decltype(value)>>) j[f.key] = fields_to_json(value);
    else j[f.key] = value;
  });
  return j;
}

// Throws nlohmann::json::exception on a missing (and not optional) or mistyped key.
template <HasFields S>
void fields_from_json(S& s, const nlohmann::json& j) {
  s.for_each_field([&](auto& value, const FieldInfo& f) {
    using T = std::remove_cvref_t<decltype(value)>;
    if (!f.key || (f.optional && !j.contains(f.key))) return;
    if constexpr (HasFields<T>) {
      fields_from_json(value, j.at(f.key));
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // get<T>() would wrap a large integer or cast a float (2^32+16 read as 16, 1e300 as anything).
      const auto& v = j.at(f.key);
      const bool fits = v.is_number_unsigned()  ? v.template get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                        : v.is_number_integer() ? v.template get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                                      (std::is_unsigned_v<T> ||
                                                       v.template get<int64_t>() <= int64_t(std::numeric_limits<T>::max()))
                                                : false;
      if (!fits) fail("\"%s\": %s is not a whole number in this setting's range", f.key, v.dump().c_str());
      value = v.template get<T>();
    } else {
      value = j.at(f.key).template get<T>();
    }
  });
}

// Checks every field's range, choices and own check; fails naming the first bad field's flag.
template <HasFields S>
void validate_fields(const S& s) {
  const_cast<S&>(s).for_each_field([](auto& value, const FieldInfo& f) {
    using T = std::remove_cvref_t<decltype(value)>;
    if constexpr (HasFields<T>) {
      validate_fields(value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (f.choices && !is_choice(f.choices, value))
        fail("%s %s: expected %s", f.flag, value.c_str(), choices_text(f.choices).c_str());
      if (f.check) f.check(f.flag, value);
    } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      if (!f.error) return;
      const double x = double(value);
      if (f.negative_is_default && x < 0) return;
      const bool ok = x >= f.min && (f.max_open ? x < f.max : x <= f.max) && (!f.finite || std::isfinite(x));
      if (!ok) fail("%s %s: %s", f.flag, field_value_text(value).c_str(), f.error);
    }
  });
}

// Copies from `src` into `dst` the fields for which keep(info) holds (both visited in the same
// order, so the i-th field of one is the i-th of the other).
template <HasFields S, class Pred>
void copy_fields_if(S& dst, const S& src, Pred keep) {
  std::vector<void*> slots;
  auto collect = [&](auto& self, auto& s) -> void {
    s.for_each_field([&](auto& value, const FieldInfo&) {
      if constexpr (HasFields<std::remove_cvref_t<decltype(value)>>) self(self, value);
      else slots.push_back(&value);
    });
  };
  collect(collect, dst);
  size_t i = 0;
  auto copy = [&](auto& self, auto& s) -> void {
    s.for_each_field([&](auto& value, const FieldInfo& f) {
      using T = std::remove_cvref_t<decltype(value)>;
      if constexpr (HasFields<T>) self(self, value);
      else if (keep(f)) *static_cast<T*>(slots[i++]) = value;
      else ++i;
    });
  };
  copy(copy, const_cast<S&>(src));  // the visit only reads src
}

}  // namespace nt
