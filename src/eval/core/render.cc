// SPDX-License-Identifier: MIT
#include "eval/core/render.h"

#include <algorithm>

#include "core/check.h"
#include "eval/core/py_random.h"

namespace nt {

std::vector<CoreItem> select_items(const std::vector<CoreItem>& items, int64_t max_items) {
  std::vector<CoreItem> out = items;
  PyRandom(1337).shuffle(out);
  if (max_items > 0 && int64_t(out.size()) > max_items) out.resize(size_t(max_items));
  return out;
}

std::vector<int64_t> select_shots(int64_t idx, int64_t n, int k) {
  NT_CHECK(k >= 0 && k <= n - 1, "%d shots from %lld items", k, (long long)n);
  // The population is [i for i in range(n) if i != idx]: position p stands for p, or p + 1 past idx.
  std::vector<int64_t> pos = PyRandom(1234 + idx).sample_indices(n - 1, k);
  for (auto& p : pos) p += p >= idx ? 1 : 0;
  return pos;
}

namespace {

// Python's str.isspace() code points.
bool is_py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

// The code point starting at s[i] and its length in bytes (invalid bytes count as themselves).
uint32_t decode_at(std::string_view s, size_t i, size_t* len) {
  const auto b = uint8_t(s[i]);
  const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
  if (i + size_t(n) > s.size() || n == 1) {
    *len = 1;
    return b;
  }
  uint32_t c = b & (0xff >> (n + 1));
  for (int k = 1; k < n; ++k) c = (c << 6) | (uint8_t(s[i + size_t(k)]) & 0x3f);
  *len = size_t(n);
  return c;
}

}  // namespace

std::string_view py_strip(std::string_view s) {
  size_t len = 0;
  while (!s.empty() && is_py_space(decode_at(s, 0, &len))) s.remove_prefix(len);
  while (!s.empty()) {
    size_t start = s.size() - 1;  // back up to the last code point's first byte
    while (start > 0 && s.size() - start < 4 && (uint8_t(s[start]) & 0xc0) == 0x80) --start;
    if (!is_py_space(decode_at(s, start, &len)) || start + len != s.size()) break;
    s.remove_suffix(len);
  }
  return s;
}

std::vector<std::string> render_prompts(CoreTaskType type, const std::string& delimiter, const CoreItem& item,
                                        const std::vector<const CoreItem*>& shots) {
  // The few-shot block: each example and a blank line.
  std::string head;
  for (const CoreItem* s : shots) {
    switch (type) {
      case CoreTaskType::kMultipleChoice:
        head += s->query + delimiter + s->choices[size_t(s->gold)];
        break;
      case CoreTaskType::kSchema:
        head += s->choices[size_t(s->gold)] + delimiter + s->continuation;
        break;
      case CoreTaskType::kLanguageModeling:
        head += std::string(py_strip(s->query)) + delimiter + s->continuation;
        break;
    }
    head += "\n\n";
  }
  std::vector<std::string> out;
  switch (type) {
    case CoreTaskType::kMultipleChoice:
      for (const auto& c : item.choices) out.push_back(head + item.query + delimiter + c);
      break;
    case CoreTaskType::kSchema:
      for (const auto& c : item.choices) out.push_back(head + c + delimiter + item.continuation);
      break;
    case CoreTaskType::kLanguageModeling: {
      const std::string without = head + std::string(py_strip(item.query)) + delimiter;
      out.push_back(std::string(py_strip(without)));
      out.push_back(without + item.continuation);
      break;
    }
  }
  return out;
}

namespace {

std::vector<int32_t> encode_with_bos(const std::string& text, const Tokenizer& tok) {
  std::vector<uint32_t> ids{tok.bos_id()};
  tok.encode(text, ids);
  return {ids.begin(), ids.end()};
}

// Tokens in the same place at the start (from_end false) or the end of every sequence.
int common_length(const std::vector<CoreCandidate>& cs, bool from_end) {
  size_t min_len = cs[0].tokens.size();
  for (const auto& c : cs) min_len = std::min(min_len, c.tokens.size());
  for (size_t i = 0; i < min_len; ++i) {
    auto at = [&](const CoreCandidate& c) { return c.tokens[from_end ? c.tokens.size() - 1 - i : i]; };
    const int32_t t = at(cs[0]);
    for (const auto& c : cs)
      if (at(c) != t) return int(i);
  }
  return int(min_len);
}

}  // namespace

CoreQuestion build_question(CoreTaskType type, const std::vector<std::string>& prompts, const Tokenizer& tok,
                            int max_len) {
  NT_CHECK(!prompts.empty() && max_len >= 1, "no prompts");
  CoreQuestion q;
  if (type == CoreTaskType::kLanguageModeling) {
    NT_CHECK(prompts.size() == 2, "language modeling renders two prompts");
    const auto without = encode_with_bos(prompts[0], tok);
    CoreCandidate c{encode_with_bos(prompts[1], tok), int(without.size()), 0};
    c.end = int(c.tokens.size());
    if (c.begin >= c.end || !std::equal(without.begin(), without.end(), c.tokens.begin()))
      fail("the tokens of the context are not a proper prefix of those of the context with the continuation");
    q.candidates.push_back(std::move(c));
  } else {
    for (const auto& p : prompts) q.candidates.push_back({encode_with_bos(p, tok), 0, 0});
    const int common = common_length(q.candidates, type == CoreTaskType::kSchema);
    for (auto& c : q.candidates) {
      c.end = int(c.tokens.size());
      c.begin = type == CoreTaskType::kSchema ? c.end - common : common;
    }
  }
  for (auto& c : q.candidates) {
    const int crop = int(c.tokens.size()) - max_len;
    if (crop > 0) {
      c.tokens.erase(c.tokens.begin(), c.tokens.begin() + crop);
      c.begin -= crop;
      c.end -= crop;
      if (c.begin < 0 || (type == CoreTaskType::kLanguageModeling && c.begin < 1))
        fail("the %d scored tokens do not fit in the model's context of %d tokens", c.end - c.begin, max_len);
    }
    // A span from the first token has no prediction for it; the reference's slice is then empty.
    if (c.begin < 1 || c.begin > c.end) c.begin = c.end;
  }
  return q;
}

}  // namespace nt
