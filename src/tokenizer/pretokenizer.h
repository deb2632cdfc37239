// SPDX-License-Identifier: MIT
// Pre-tokenisation: the regular expression that cuts text into pieces before byte-pair merging
// (GPT-2 / GPT-4 style), compiled once with PCRE2 (UTF + Unicode properties, JIT).
//
// Semantics, chosen to equal tiktoken's (Rust `fancy-regex`) on valid UTF-8:
//  * `\s` / `\S` mean Unicode White_Space (as in Rust), not PCRE2's wider set: the pattern is
//    rewritten before compiling (PCRE2 10.42 counts U+180E as a space; Rust does not).
//  * Pieces are the successive leftmost matches. Text the pattern does not match (impossible for
//    the shipped patterns, possible for a user pattern) becomes a piece of its own instead of
//    being dropped, so that encoding never loses bytes.
//  * Invalid UTF-8: the text is cut into maximal valid runs; each run is split on its own (as if
//    it were a whole text) and every invalid byte is a "raw" piece of one byte. Exact round trip
//    for any byte sequence follows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nt {

// nanochat's variant of the GPT-4 (cl100k) pattern: digits grouped by 1-2, possessive quantifiers.
inline constexpr const char* kDefaultSplitPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";

// Length of the longest valid UTF-8 prefix of [p, p+n) (no overlongs, surrogates or > U+10FFFF).
size_t valid_utf8_prefix(const uint8_t* p, size_t n);

// A match that needs more than these is an error ("text too complex for the pattern"), so that a
// pathological user pattern (nested quantifiers) fails in a moment instead of backtracking for an
// hour. The GPT-style patterns need a few hundred steps and a few KiB per match.
inline constexpr uint32_t kRegexMatchLimit = 1'000'000;  // backtracking steps per match
inline constexpr uint32_t kRegexDepthLimit = 10'000;     // nested backtracking frames
inline constexpr uint32_t kRegexHeapKiB = 64 * 1024;     // heap for those frames

class PreTokenizer {
 public:
  // Throws nt::Error ("--pattern: ...") if the pattern does not compile.
  explicit PreTokenizer(std::string pattern);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;
  const std::string& pattern() const { return pattern_; }

  // Iterates over the pieces of one text. Not thread-safe itself; make one per thread (cheap).
  class Iterator {
   public:
    Iterator(const PreTokenizer& pre, std::string_view text);
    ~Iterator();
    Iterator(const Iterator&) = delete;
    Iterator& operator=(const Iterator&) = delete;
    // Next piece; *raw is true for a single invalid-UTF-8 byte. Returns false at the end.
    bool next(std::string_view* piece, bool* raw);

   private:
    const PreTokenizer& pre_;
    const uint8_t* text_;
    size_t size_, pos_ = 0, run_begin_ = 0, run_end_ = 0;
    void* match_data_;
  };

 private:
  std::string pattern_;
  void* code_ = nullptr;
  void* match_context_ = nullptr;  // the match, depth and heap limits (shared by every iterator)
  bool jit_ = false;
};

}  // namespace nt
