// SPDX-License-Identifier: MIT
// Rendering, spans and truncation: golden prompts written by hand for each task type (byte for
// byte), the reference's choice of items and shots, and spans on the byte tokenizer, whose ids
// are the prompt's bytes (BOS = 256), so every expected span can be read off the text.
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "eval/core/render.h"
#include "tokenizer/byte_tokenizer.h"

namespace nt {
namespace {

CoreItem mc(std::string q, std::vector<std::string> choices, int gold) {
  CoreItem it;
  it.query = std::move(q);
  it.choices = std::move(choices);
  it.gold = gold;
  return it;
}
CoreItem schema(std::vector<std::string> options, std::string cont, int gold) {
  CoreItem it;
  it.choices = std::move(options);
  it.continuation = std::move(cont);
  it.gold = gold;
  return it;
}
CoreItem lm(std::string ctx, std::string cont) {
  CoreItem it;
  it.query = std::move(ctx);
  it.continuation = std::move(cont);
  return it;
}

TEST(CoreRender, MultipleChoiceGolden) {
  const CoreItem s1 = mc("Sky?", {"green", "blue"}, 1), s2 = mc(" Grass? ", {"green", "red"}, 0);
  const CoreItem item = mc("Snow?", {"white", "black"}, 0);
  const auto p = render_prompts(CoreTaskType::kMultipleChoice, " ", item, {&s1, &s2});
  ASSERT_EQ(p.size(), 2u);
  // Shots keep their own whitespace (no trim in multiple choice); a blank line after each.
  EXPECT_EQ(p[0], "Sky? blue\n\n Grass?  green\n\nSnow? white");
  EXPECT_EQ(p[1], "Sky? blue\n\n Grass?  green\n\nSnow? black");
  const auto z = render_prompts(CoreTaskType::kMultipleChoice, "\nAnswer: ", item, {});
  EXPECT_EQ(z[0], "Snow?\nAnswer: white");
}

TEST(CoreRender, SchemaGolden) {
  const CoreItem s1 = schema({"The cat", "The dog"}, "barked.", 1);
  const CoreItem item = schema({"Tom thanked Ann because she", "Tom thanked Ann because he"}, "helped him.", 0);
  const auto p = render_prompts(CoreTaskType::kSchema, " ", item, {&s1});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], "The dog barked.\n\nTom thanked Ann because she helped him.");
  EXPECT_EQ(p[1], "The dog barked.\n\nTom thanked Ann because he helped him.");
}

TEST(CoreRender, LanguageModelingGolden) {
  // Contexts are trimmed (shots and item), the prompt without the continuation is stripped.
  const CoreItem s1 = lm("\n  Two plus two is ", "four"), s2 = lm("Red and\t", "blue");
  const CoreItem item = lm("  The capital of France is\n", "Paris");
  const auto p = render_prompts(CoreTaskType::kLanguageModeling, " ", item, {&s1, &s2});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0], "Two plus two is four\n\nRed and blue\n\nThe capital of France is");
  EXPECT_EQ(p[1], "Two plus two is four\n\nRed and blue\n\nThe capital of France is Paris");
  // Python's str.strip: Unicode whitespace too (NBSP, ideographic space), not other characters.
  const CoreItem u =
      lm("\xC2\xA0\xE3\x80\x80"
         "Caf\xC3\xA9\xE2\x80\x83",
         "x");
  const auto q = render_prompts(CoreTaskType::kLanguageModeling, "=", u, {});
  EXPECT_EQ(q[0], "Caf\xC3\xA9=");
  EXPECT_EQ(q[1], "Caf\xC3\xA9=x");
  const auto r = render_prompts(CoreTaskType::kLanguageModeling, ":\n", lm("Q", "A"), {});
  EXPECT_EQ(r[0], "Q:");  // the trailing newline of the delimiter is stripped only without the answer
  EXPECT_EQ(r[1], "Q:\nA");
}

TEST(CoreRender, PyStrip) {
  EXPECT_EQ(py_strip(" \t\n\r\x0b\x0c\x1c\x1f a b \x85"), "a b \x85");  // \x85 alone is not UTF-8 NEL
  EXPECT_EQ(py_strip("\xC2\x85"
                     "a\xE2\x80\xA8"),
            "a");  // NEL, LINE SEPARATOR
  EXPECT_EQ(py_strip("\xE2\x80\x8B"
                     "a"),
            "\xE2\x80\x8B"
            "a");  // zero-width space is not whitespace
  EXPECT_EQ(py_strip("   "), "");
}

TEST(CoreRender, ItemsAndShotsFollowPythonRandom) {
  // random.Random(1337).shuffle(list(range(10))) == [0, 3, 7, 2, 1, 6, 4, 5, 8, 9]
  std::vector<CoreItem> items;
  for (int i = 0; i < 10; ++i) items.push_back(lm(std::to_string(i), "x"));
  const auto chosen = select_items(items, 4);
  ASSERT_EQ(chosen.size(), 4u);
  EXPECT_EQ(chosen[0].query, "0");
  EXPECT_EQ(chosen[1].query, "3");
  EXPECT_EQ(chosen[2].query, "7");
  EXPECT_EQ(chosen[3].query, "2");
  EXPECT_EQ(select_items(items, 0).size(), 10u);
  // random.Random(1234 + 5).sample([i for i in range(100) if i != 5], 3) == [10, 36, 59]
  EXPECT_EQ(select_shots(5, 100, 3), (std::vector<int64_t>{10, 36, 59}));
  for (int64_t idx = 0; idx < 6; ++idx) {
    const auto s = select_shots(idx, 6, 5);  // every other position, none twice
    std::vector<bool> seen(6, false);
    for (int64_t p : s) {
      EXPECT_NE(p, idx);
      EXPECT_FALSE(seen[size_t(p)]);
      seen[size_t(p)] = true;
    }
  }
}

TEST(CoreSpans, MultipleChoiceCommonPrefix) {
  ByteTokenizer tok;
  const auto q = build_question(CoreTaskType::kMultipleChoice, {"Q: ab", "Q: ac", "Q: b"}, tok, 100);
  ASSERT_EQ(q.candidates.size(), 3u);
  // BOS + "Q: " is shared by all three: 4 tokens.
  for (const auto& c : q.candidates) {
    EXPECT_EQ(c.tokens[0], 256);
    EXPECT_EQ(c.begin, 4);
    EXPECT_EQ(c.end, int(c.tokens.size()));
  }
  EXPECT_EQ(q.candidates[0].end, 6);
  EXPECT_EQ(q.candidates[2].end, 5);
  // A choice that is a prefix of the others scores an empty span (its mean loss is NaN).
  const auto p = build_question(CoreTaskType::kMultipleChoice, {"Q: 1", "Q: 10"}, tok, 100);
  EXPECT_EQ(p.candidates[0].begin, p.candidates[0].end);
  EXPECT_EQ(p.candidates[1].begin, 5);
  EXPECT_EQ(p.candidates[1].end, 6);
}

TEST(CoreSpans, SchemaCommonSuffix) {
  ByteTokenizer tok;
  const auto q = build_question(CoreTaskType::kSchema, {"he ran.", "she ran."}, tok, 100);
  // " ran." is shared at the end; "he" vs "she" ends in "he" too: "he ran." is 7 shared bytes.
  EXPECT_EQ(q.candidates[0].end, 8);
  EXPECT_EQ(q.candidates[0].begin, 1);
  EXPECT_EQ(q.candidates[1].end, 9);
  EXPECT_EQ(q.candidates[1].begin, 2);
  const auto r = build_question(CoreTaskType::kSchema, {"a x", "b x"}, tok, 100);
  EXPECT_EQ(r.candidates[0].begin, 2);
  EXPECT_EQ(r.candidates[0].end, 4);
}

TEST(CoreSpans, LanguageModelingPrefix) {
  ByteTokenizer tok;
  const auto q = build_question(CoreTaskType::kLanguageModeling, {"The end", "The end is near"}, tok, 100);
  ASSERT_EQ(q.candidates.size(), 1u);
  EXPECT_EQ(q.candidates[0].tokens.size(), 16u);
  EXPECT_EQ(q.candidates[0].begin, 8);
  EXPECT_EQ(q.candidates[0].end, 16);
  EXPECT_THROW(build_question(CoreTaskType::kLanguageModeling, {"abc", "abd"}, tok, 100), Error);
  EXPECT_THROW(build_question(CoreTaskType::kLanguageModeling, {"abc", "abc"}, tok, 100), Error);
}

TEST(CoreSpans, LeftTruncationShiftsSpans) {
  ByteTokenizer tok;
  // 1 + 10 tokens, context of 8: the first 3 go, the spans move down by 3.
  auto q = build_question(CoreTaskType::kMultipleChoice, {"0123456789", "01234567xy"}, tok, 8);
  for (const auto& c : q.candidates) {
    EXPECT_EQ(c.tokens.size(), 8u);
    EXPECT_EQ(c.begin, 9 - 3);
    EXPECT_EQ(c.end, 11 - 3);
  }
  EXPECT_EQ(q.candidates[0].tokens[0], '2');
  // A shorter candidate is not cut; its span (a prefix of the other) is empty.
  q = build_question(CoreTaskType::kMultipleChoice, {"0123456789", "012345678"}, tok, 10);
  EXPECT_EQ(q.candidates[0].tokens.size(), 10u);
  EXPECT_EQ(q.candidates[0].begin, 9);
  EXPECT_EQ(q.candidates[0].end, 10);
  EXPECT_EQ(q.candidates[1].tokens.size(), 10u);
  EXPECT_EQ(q.candidates[1].begin, 10);
  EXPECT_EQ(q.candidates[1].end, 10);
}

TEST(CoreSpans, TruncationLimits) {
  ByteTokenizer tok;
  // Span start lands exactly on the first kept token: no prediction for it, an empty span.
  auto q = build_question(CoreTaskType::kMultipleChoice, {"abcdefg", "abcxyzw"}, tok, 4);
  EXPECT_EQ(q.candidates[0].begin, q.candidates[0].end);
  // The span itself is longer than the context: the reference stops.
  EXPECT_THROW(build_question(CoreTaskType::kMultipleChoice, {"aXXXXXXX", "bYYYYYYY"}, tok, 4), Error);
  EXPECT_THROW(build_question(CoreTaskType::kLanguageModeling, {"ab", "abcdef"}, tok, 4), Error);
  q = build_question(CoreTaskType::kLanguageModeling, {"ab", "abcdef"}, tok, 5);
  EXPECT_EQ(q.candidates[0].begin, 1);
  EXPECT_EQ(q.candidates[0].end, 5);
}

}  // namespace
}  // namespace nt
