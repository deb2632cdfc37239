// SPDX-License-Identifier: MIT
// Parses human durations: "90s", "5m", "1.5h", "1h30m", "250ms", or plain seconds "300".
#pragma once
#include <optional>
#include <string>

namespace nt {
// Seconds, or nullopt if the text is not a positive finite duration.
std::optional<double> parse_duration(const std::string& text);
std::string format_duration(double seconds);  // "4m05s", "12.3s"
}  // namespace nt
