// SPDX-License-Identifier: MIT
#include "data/documents.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "core/sha256.h"

namespace nt {

bool is_valid_utf8(const std::string& s, size_t* bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else { if (bad_offset) *bad_offset = i; return false; }
    if (i + len > n) { if (bad_offset) *bad_offset = i; return false; }
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) { if (bad_offset) *bad_offset = i; return false; }
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) { if (bad_offset) *bad_offset = i; return false; }
    i += len;
  }
  return true;
}

namespace {

void check_utf8(const std::string& text, const std::string& where) {
  size_t bad = 0;
  if (!is_valid_utf8(text, &bad)) fail("%s: not valid UTF-8 text (first bad byte at offset %zu)", where.c_str(), bad);
}

// Cuts text into pieces of at least `cut` bytes, ending at a blank line when possible, else at a
// line end, else anywhere on a UTF-8 boundary.
void cut_text(const std::string& text, size_t cut, std::vector<std::string>& docs) {
  cut = std::max<size_t>(cut, 1);  // a zero cut would never advance
  size_t start = 0;
  while (start < text.size()) {
    if (text.size() - start <= 2 * cut) { docs.push_back(text.substr(start)); break; }
    size_t end = text.find("\n\n", start + cut);
    if (end == std::string::npos || end - start > 4 * cut) end = text.find('\n', start + cut);
    if (end == std::string::npos || end - start > 4 * cut) {
      end = start + cut;
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    } else {
      while (end < text.size() && text[end] == '\n') ++end;
    }
    docs.push_back(text.substr(start, end - start));
    start = end;
  }
}

void read_jsonl(const std::string& text, const std::string& path, const DocumentOptions& opt, std::vector<std::string>& docs) {
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json rec;
    try {
      rec = parse_json(line, path + ":" + std::to_string(line_no), SIZE_MAX);
    } catch (const nlohmann::json::exception&) {
      fail("%s:%zu: malformed JSON line", path.c_str(), line_no);
    }
    if (!rec.is_object() || !rec.contains(opt.jsonl_field) || !rec[opt.jsonl_field].is_string())
      fail("%s:%zu: record has no string field \"%s\"", path.c_str(), line_no, opt.jsonl_field.c_str());
    std::string doc = rec[opt.jsonl_field].get<std::string>();
    check_utf8(doc, path + ":" + std::to_string(line_no));
    if (!doc.empty()) docs.push_back(std::move(doc));
  }
}

void read_one(const std::string& path, const DocumentOptions& opt, std::vector<std::string>& docs) {
  parse_documents(read_file(path), path, opt, docs);
}

}  // namespace

void parse_documents(const std::string& text, const std::string& path, const DocumentOptions& opt,
                     std::vector<std::string>& docs) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".jsonl") return read_jsonl(text, path, opt, docs);
  check_utf8(text, path);
  if (text.empty()) return;
  cut_text(text, opt.cut_bytes, docs);
}

void read_documents(const std::vector<std::string>& inputs, const DocumentOptions& opt,
                    std::vector<std::string>& docs) {
  namespace fs = std::filesystem;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> files;
      for (const auto& e : fs::recursive_directory_iterator(in, ec))
        if (e.is_regular_file()) files.push_back(e.path().string());
      if (ec) fail("%s: cannot list directory: %s", in.c_str(), ec.message().c_str());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) read_one(f, opt, docs);
    } else if (fs::exists(in, ec)) {
      read_one(in, opt, docs);
    } else {
      fail("--input %s: no such file or directory", in.c_str());
    }
  }
}

void split_documents(std::vector<std::string>& docs, double val_frac, std::vector<std::string>& val) {
  if (docs.size() < 2) fail("need at least 2 documents to hold out a validation split (got %zu); pass --val-input", docs.size());
  std::vector<std::string> train;
  std::vector<std::pair<double, size_t>> keys;
  for (size_t i = 0; i < docs.size(); ++i) {
    Digest d = sha256(docs[i]);
    uint64_t k = 0;
    for (int j = 0; j < 8; ++j) k = (k << 8) | d[j];
    keys.push_back({double(k) * 0x1.0p-64, i});
  }
  std::vector<bool> is_val(docs.size());
  size_t nval = 0;
  for (auto& [k, i] : keys) if (k < val_frac) { is_val[i] = true; ++nval; }
  auto by_key = keys;
  std::sort(by_key.begin(), by_key.end());
  if (nval == 0) { is_val[by_key.front().second] = true; ++nval; }
  if (nval == docs.size()) is_val[by_key.back().second] = false;
  for (size_t i = 0; i < docs.size(); ++i) (is_val[i] ? val : train).push_back(std::move(docs[i]));
  docs = std::move(train);
}

}  // namespace nt
