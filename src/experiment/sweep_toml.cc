// SPDX-License-Identifier: MIT
#include "experiment/sweep_toml.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <cctype>
#include <cmath>
#include <memory>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"

namespace nt::experiment {

namespace {

std::string at_line(const std::string& path, const toml::node& n) {
  const auto line = n.source().begin.line;
  return line > 0 ? strf("%s:%u", path.c_str(), unsigned(line)) : path;
}

nlohmann::json to_json(const toml::node& n, const std::string& path, int depth) {
  if (depth > kJsonMaxDepth) fail("%s: nested more than %d levels deep", at_line(path, n).c_str(), kJsonMaxDepth);
  switch (n.type()) {
    case toml::node_type::table: {
      nlohmann::json out = nlohmann::json::object();
      for (auto&& [k, v] : *n.as_table()) out[std::string(k.str())] = to_json(v, path, depth + 1);
      return out;
    }
    case toml::node_type::array: {
      nlohmann::json out = nlohmann::json::array();
      for (const toml::node& v : *n.as_array()) out.push_back(to_json(v, path, depth + 1));
      return out;
    }
    case toml::node_type::string:
      return n.as_string()->get();
    case toml::node_type::integer:
      return n.as_integer()->get();
    case toml::node_type::boolean:
      return n.as_boolean()->get();
    case toml::node_type::floating_point: {
      const double v = n.as_floating_point()->get();
      if (!std::isfinite(v)) fail("%s: %g is not a value a flag takes", at_line(path, n).c_str(), v);
      return v;
    }
    default:
      fail("%s: a date or time is not a value a flag takes", at_line(path, n).c_str());
  }
}

// The node at keys (tables by key, arrays by index), or the deepest one found on the way.
const toml::node* find(const toml::table& root, const std::vector<std::string>& keys) {
  const toml::node* n = &root;
  for (const std::string& k : keys) {
    const toml::node* next = nullptr;
    if (const toml::table* t = n->as_table()) {
      next = t->get(k);
    } else if (const toml::array* a = n->as_array()) {
      char* end = nullptr;
      const unsigned long i = std::strtoul(k.c_str(), &end, 10);
      if (!k.empty() && *end == 0 && i < a->size()) next = a->get(i);
    }
    if (!next) break;
    n = next;
  }
  return n;
}

// toml++ bounds the nesting of arrays and inline tables but not of dotted keys, and a key of a
// million parts ("a.a.a...") nests tables a million deep, whose recursive teardown overflows the
// stack. So before parsing, the dots that separate key parts (outside strings and comments; a
// number's or a time's one dot between digits is not one) are counted, at most kJsonMaxDepth a line.
void check_key_parts(std::string_view text, const std::string& path) {
  unsigned line = 1;
  int dots = 0, token_dots = 0;
  size_t token_start = std::string_view::npos, dot_at = 0;
  const auto is_token = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  };
  const auto end_token = [&](size_t end) {
    if (token_start == std::string_view::npos) return;
    const bool number = token_dots == 1 && dot_at > token_start && dot_at + 1 < end &&
                        std::isdigit(static_cast<unsigned char>(text[dot_at - 1])) &&
                        std::isdigit(static_cast<unsigned char>(text[dot_at + 1]));
    dots += number ? 0 : token_dots;
    if (dots > kJsonMaxDepth) fail("%s:%u: a key of more than %d dotted parts", path.c_str(), line, kJsonMaxDepth);
    token_start = std::string_view::npos, token_dots = 0;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_token(c)) {
      if (token_start == std::string_view::npos) token_start = i;
      if (c == '.') ++token_dots, dot_at = i;
      continue;
    }
    end_token(i);
    if (c == '\n') {
      ++line, dots = 0;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool multi = text.substr(i, 3) == std::string(3, c);
      const std::string_view close = multi ? std::string_view(c == '"' ? "\"\"\"" : "\'\'\'") : text.substr(i, 1);
      for (i += multi ? 3 : 1; i < text.size() && text.substr(i, close.size()) != close; ++i) {
        if (text[i] == '\n') ++line;
        if (c == '"' && text[i] == '\\') ++i;  // an escaped character
      }
      i += close.size() - 1;
    }
  }
  end_token(text.size());
}

}  // namespace

TomlSweepFile parse_toml_sweep(std::string_view text, const std::string& path) {
  if (text.size() > kJsonMaxBytes)
    fail("%s: %zu bytes of TOML, more than the %zu allowed", path.c_str(), text.size(), kJsonMaxBytes);
  check_key_parts(text, path);
  auto root = std::make_shared<toml::table>();
  try {
    *root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    fail("%s:%u:%u: not valid TOML: %s", path.c_str(), unsigned(b.line), unsigned(b.column),
         std::string(e.description()).c_str());
  }
  TomlSweepFile out;
  out.json = to_json(*root, path, 0);
  out.at = [root, path](const std::vector<std::string>& keys) {
    return keys.empty() ? path : at_line(path, *find(*root, keys));
  };
  return out;
}

TomlSweepFile read_toml_sweep_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && size_t(st.st_size) > kJsonMaxBytes)
    fail("%s: %lld bytes, more than the %zu allowed for this file", path.c_str(), (long long)st.st_size, kJsonMaxBytes);
  return parse_toml_sweep(read_file(path), path);
}

}  // namespace nt::experiment
