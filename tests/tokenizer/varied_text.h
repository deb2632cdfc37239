// SPDX-License-Identifier: MIT
// Varied test text for tokenizer tests: many scripts, whitespace runs, contractions, emoji, CRLF,
// digits, very long words, and (optionally) invalid UTF-8. Deterministic from the seed.
#pragma once
#include <string>
#include <vector>

#include "core/rng.h"

namespace nt::testing {

inline const std::vector<std::string>& text_fragments() {
  static const std::vector<std::string> f = {
      "Hello, world!", "It's", "don't", "I'M", "they'll", "we've", "she'd", "you're", "IT'S", "O'Neil's",
      "'s", "'t", "'ll", "'ſ", "'Ŀl", "naïve café", "e\u0301", "Ångström", "straße", "ﬁne", "ǅemal",
      "Привет, мир!", "Καλημέρα κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
      "你好，世界。", "こんにちは世界", "カタカナ", "안녕하세요 세계", "ქართული", "Հայերեն", "ᚠᚢᚦᚨᚱ", "𐌰𐌱𐌲",
      "👋🏽", "🎉🎉🎉", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "❤️", "∑∫√∞≠≤", "→⇒", "©®™", "…", "—", "«»", "“quoted”",
      "12", "123", "1234567890", "3.14159", "1,000,000", "２０２４", "٣٤٥", "१२३", "²³", "Ⅻ", "½", "0x1F", "v1.2.3",
      " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n", "  \n  ", "\r", "\u00a0",
      "\u3000", "\u2028", "\u0085", "\u180e", "\u200b", "\u2003", " \u00a0 ", "\f", "\v",
      "!!!", "...", "?!", "#include <stdio.h>", "x += 1;", "a/b/c", "https://example.com/x?y=1&z=2", "@user",
      "foo_bar", "CamelCaseWord", "ALLCAPS", "MiXeD", "'quoted'", "\"double\"", "(paren)", "[b]", "{c}",
      "tab\there", "end.", " leading", "trailing ", "a", "I", "A1B2", "x²", "H₂O",
  };
  return f;
}

// n random texts; with invalid=true some contain bytes that are not valid UTF-8.
inline std::vector<std::string> varied_texts(uint64_t seed, size_t n, bool invalid) {
  const auto& f = text_fragments();
  static const std::vector<std::string> seps = {" ", "", "\n", "  ", "\r\n", "\t", " \n\n", ", "};
  static const std::vector<std::string> bad = {"\xff", "\xc3(", "\xe2\x82", "\xed\xa0\x80", "\xc0\xaf", "\x80", "\xf4\x90\x80\x80", "\xfe\xfe"};
  Rng rng(seed);
  std::vector<std::string> out;
  // Fixed hard cases first.
  out.push_back(std::string(5000, 'a'));
  out.push_back("x" + std::string(3000, ' ') + "y");
  out.push_back(std::string(2000, ' '));
  out.push_back(std::string(1000, '\n') + "z");
  out.push_back(std::string(1500, '7'));
  out.push_back(std::string(1200, '!') + "ab");
  out.push_back("\r\n\r\n  \r\n\t \t\n");
  {
    std::string w;
    for (int i = 0; i < 4000; ++i) w += char('a' + rng.below(26));
    out.push_back(w);
  }
  {
    std::string w;
    for (int i = 0; i < 800; ++i) w += "é";
    out.push_back(w);
  }
  for (const auto& s : f) out.push_back(s);
  while (out.size() < n) {
    std::string t;
    const int parts = 1 + int(rng.below(40));
    for (int p = 0; p < parts; ++p) {
      const uint64_t r = rng.below(100);
      if (invalid && r < 4) t += bad[rng.below(bad.size())];
      else if (r < 8) t += std::string(1 + rng.below(30), " \n\t"[rng.below(3)]);
      else t += f[rng.below(f.size())];
      t += seps[rng.below(seps.size())];
    }
    out.push_back(std::move(t));
  }
  if (invalid) {
    out.push_back("abc\x80" "def");
    out.push_back("   \xff   x");
    out.push_back("'\xff" "s");
    out.push_back("\xe2\x82\xac\xe2\x82");
  }
  return out;
}

}  // namespace nt::testing
