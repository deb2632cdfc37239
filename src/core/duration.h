// SPDX-License-Identifier: MIT
// Human durations. The grammar is one or more NUMBER UNIT parts, or one plain NUMBER (seconds):
//   NUMBER = digits, optionally "." and digits (no sign, exponent or hex);
//   UNIT   = ms | s | m | min | h.
// Examples: "90s", "5m", "1.5h", "1h30m", "250ms", "300". At most kMaxDurationSeconds in all.
#pragma once
#include <optional>
#include <string>

namespace nt {
inline constexpr double kMaxDurationSeconds = 1000.0 * 3600;  // 1000 hours
// Seconds, or nullopt if the text is not a positive duration in the grammar above.
std::optional<double> parse_duration(const std::string& text);
std::string format_duration(double seconds);  // "4m05s", "12.3s"
}  // namespace nt
