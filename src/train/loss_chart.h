// SPDX-License-Identifier: MIT
// The run folder's loss.svg: the training loss over the training time (every step's, and a
// moving average through them) and each evaluation's validation loss, drawn from the lines of
// metrics.jsonl, so a resumed run's chart shows the whole run.
#pragma once
#include <string>

namespace nt {

// metrics: the text of metrics.jsonl ("type":"step" and "type":"eval" records; other lines,
// and lines that do not parse, are skipped).
std::string loss_chart_svg(const std::string& metrics, const std::string& title, const std::string& subtitle);

}  // namespace nt
