// SPDX-License-Identifier: MIT
// Standard base64 (RFC 4648, with padding), as used by the .tiktoken format.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace nt {

std::string base64_encode(std::string_view bytes);
// Returns nullopt on any character outside the alphabet or a bad length/padding.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace nt
