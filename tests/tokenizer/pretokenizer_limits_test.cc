// SPDX-License-Identifier: MIT
// A user's pre-tokenizer pattern runs under PCRE2's match, depth and heap limits: a pattern that
// backtracks catastrophically is an error naming the cause, and a normal one is not affected.
#include <gtest/gtest.h>

#include "core/check.h"
#include "test_util.h"
#include "tokenizer/pretokenizer.h"

namespace nt {
namespace {

std::vector<std::string> pieces(const PreTokenizer& pre, const std::string& text) {
  PreTokenizer::Iterator it(pre, text);
  std::vector<std::string> out;
  std::string_view p;
  bool raw = false;
  while (it.next(&p, &raw)) out.emplace_back(p);
  return out;
}

TEST(PreTokenizerLimits, CatastrophicBacktrackingIsAnError) {
  // (a+)+$ on "aaa...ab" tries 2^n ways to split the a's before giving up at each start.
  const PreTokenizer pre("(a+)+$");
  const std::string text = std::string(64, 'a') + "b";
  const std::string err = test::error_of([&] { pieces(pre, text); });
  EXPECT_NE(err.find("pre-tokenizer: the pattern gave up on this text ("), std::string::npos) << err;
  EXPECT_NE(err.find("limit"), std::string::npos) << err;
}

TEST(PreTokenizerLimits, DeepRecursionIsAnError) {
  const PreTokenizer pre("(?:(a)|b)*c|x");
  const std::string text(200000, 'a');
  const std::string err = test::error_of([&] { pieces(pre, text); });
  // Either PCRE2 runs this iteratively within its limits, or it reports a limit; never a crash.
  if (!err.empty()) {
    EXPECT_NE(err.find("limit"), std::string::npos) << err;
  }
}

TEST(PreTokenizerLimits, NormalPatternsAreNotAffected) {
  const PreTokenizer pre(R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)");
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "word" + std::to_string(i) + ", ";
  const auto p = pieces(pre, text);
  std::string joined;
  for (const auto& s : p) joined += s;
  EXPECT_EQ(joined, text);
  EXPECT_GT(p.size(), 40000u);
}

}  // namespace
}  // namespace nt
