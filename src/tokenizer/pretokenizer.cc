// SPDX-License-Identifier: MIT
#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstring>

#include "core/check.h"

namespace nt {

size_t valid_utf8_prefix(const uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      uint64_t v;
      std::memcpy(&v, p + i, 8);
      if (v & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    const unsigned c = p[i];
    if (c < 0x80) { ++i; continue; }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return n;
}

namespace {

// Unicode White_Space, the meaning of \s in Rust's regex crate (and so in tiktoken).
constexpr const char* kWhiteSpace =
    "\\x{09}-\\x{0D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

std::string rewrite_whitespace(const std::string& pat) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pat.size(); ++i) {
    const char c = pat[i];
    if (c == '\\' && i + 1 < pat.size()) {
      const char d = pat[i + 1];
      if (d == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (d == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += d;
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pat.size() && pat[i + 1] == '^') out += pat[++i];
      if (i + 1 < pat.size() && pat[i + 1] == ']') out += pat[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

PreTokenizer::PreTokenizer(std::string pattern) : pattern_(std::move(pattern)) {
  const std::string rewritten = rewrite_whitespace(pattern_);
  int err = 0;
  PCRE2_SIZE off = 0;
  auto* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    fail("--pattern: does not compile: %s (near offset %zu of the rewritten pattern)", reinterpret_cast<char*>(msg), size_t(off));
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  auto* ctx = pcre2_match_context_create(nullptr);
  NT_CHECK(ctx != nullptr, "out of memory");
  pcre2_set_match_limit(ctx, kRegexMatchLimit);
  pcre2_set_depth_limit(ctx, kRegexDepthLimit);
  pcre2_set_heap_limit(ctx, kRegexHeapKiB);
  match_context_ = ctx;
}

PreTokenizer::~PreTokenizer() {
  pcre2_match_context_free(static_cast<pcre2_match_context*>(match_context_));
  pcre2_code_free(static_cast<pcre2_code*>(code_));
}

PreTokenizer::Iterator::Iterator(const PreTokenizer& pre, std::string_view text)
    : pre_(pre), text_(reinterpret_cast<const uint8_t*>(text.data())), size_(text.size()) {
  match_data_ = pcre2_match_data_create(1, nullptr);
  NT_CHECK(match_data_ != nullptr, "out of memory");
}

PreTokenizer::Iterator::~Iterator() { pcre2_match_data_free(static_cast<pcre2_match_data*>(match_data_)); }

bool PreTokenizer::Iterator::next(std::string_view* piece, bool* raw) {
  if (pos_ >= size_) return false;
  if (pos_ >= run_end_) {
    // Start a new valid run, or emit one invalid byte.
    const size_t len = valid_utf8_prefix(text_ + pos_, size_ - pos_);
    if (len == 0) {
      *piece = std::string_view(reinterpret_cast<const char*>(text_ + pos_), 1);
      *raw = true;
      ++pos_;
      return true;
    }
    run_begin_ = pos_;
    run_end_ = pos_ + len;
  }
  *raw = false;
  auto* code = static_cast<pcre2_code*>(pre_.code_);
  auto* md = static_cast<pcre2_match_data*>(match_data_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text_ + run_begin_);
  const size_t subject_len = run_end_ - run_begin_;
  const size_t start = pos_ - run_begin_;
  auto* ctx = static_cast<pcre2_match_context*>(pre_.match_context_);
  const int rc = pre_.jit_ ? pcre2_jit_match(code, subject, subject_len, start, 0, md, ctx)
                           : pcre2_match(code, subject, subject_len, start, PCRE2_NO_UTF_CHECK, md, ctx);
  size_t mb = subject_len, me = subject_len;
  if (rc > 0) {
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    mb = ov[0];
    me = ov[1];
  } else if (rc != PCRE2_ERROR_NOMATCH) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    fail("pre-tokenizer: the pattern gave up on this text (%s): text too complex for the pattern",
         reinterpret_cast<char*>(msg));
  }
  if (mb > start || me == mb) {
    // Unmatched text (or an empty match) up to the next match: one piece, so no byte is lost.
    size_t end = mb > start ? mb : start + 1;
    while (end < subject_len && (subject[end] & 0xC0) == 0x80) ++end;
    me = end;
  }
  *piece = std::string_view(reinterpret_cast<const char*>(subject + start), me - start);
  pos_ = run_begin_ + me;
  return true;
}

}  // namespace nt
