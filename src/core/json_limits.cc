// SPDX-License-Identifier: MIT
#include "core/json_limits.h"

#include <sys/stat.h>

#include "core/check.h"
#include "core/files.h"

namespace nt {

nlohmann::json parse_json(std::string_view text, const std::string& what, size_t max_bytes, int max_depth) {
  if (text.size() > max_bytes)
    fail("%s: %zu bytes of JSON, more than the %zu allowed", what.c_str(), text.size(), max_bytes);
  auto bounded = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if (event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start)
      if (depth >= max_depth) fail("%s: JSON nested more than %d levels deep", what.c_str(), max_depth);
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), bounded);
}

nlohmann::json read_json_file(const std::string& path, size_t max_bytes, int max_depth) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && size_t(st.st_size) > max_bytes)
    fail("%s: %lld bytes, more than the %zu allowed for this file", path.c_str(), (long long)st.st_size, max_bytes);
  return parse_json(read_file(path), path, max_bytes, max_depth);
}

}  // namespace nt
