// SPDX-License-Identifier: MIT
// JSON from files and headers, bounded: nlohmann's parser takes any size and nesting, and its
// values cost tens of bytes each, so every JSON input goes through these limits first and memory
// stays within a small multiple of a small input.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nt {

inline constexpr size_t kJsonMaxBytes = size_t(8) << 20;  // configs, data.json, run metadata
inline constexpr int kJsonMaxDepth = 64;

// Parses text of at most max_bytes nested at most max_depth deep. A limit passed is nt::Error
// naming `what`; a syntax error stays nlohmann::json::exception for the caller's own message.
nlohmann::json parse_json(std::string_view text, const std::string& what, size_t max_bytes = kJsonMaxBytes,
                          int max_depth = kJsonMaxDepth);
// A whole file, refused before reading when it is larger than max_bytes.
nlohmann::json read_json_file(const std::string& path, size_t max_bytes = kJsonMaxBytes,
                              int max_depth = kJsonMaxDepth);

}  // namespace nt
