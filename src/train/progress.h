// SPDX-License-Identifier: MIT
// The live progress line: rewritten in place on a terminal, plain log lines otherwise.
#pragma once
#include <string>

namespace nt {

class TrainProgress {
 public:
  explicit TrainProgress(bool quiet);
  // Shows text; on a terminal replaces the current line, else prints a line at most every
  // `log_interval_s` seconds (and always when force is true).
  void update(const std::string& text, bool force = false);
  // Ends the in-place line before other output.
  void finish();
  void print(const std::string& text);  // a normal line, after ending the progress line

 private:
  bool tty_, quiet_, open_ = false;
  double last_log_ = -1e9;
};

}  // namespace nt
