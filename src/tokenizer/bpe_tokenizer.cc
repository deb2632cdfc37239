// SPDX-License-Identifier: MIT
#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "tokenizer/base64.h"

namespace nt {

namespace {

inline uint64_t hash_bytes(const uint8_t* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xC2B2AE3D27D4EB4Full);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    h = (h ^ v) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  h *= 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 33);
}

constexpr uint32_t kEmpty = 0xFFFFFFFFu;

}  // namespace

BpeTokenizer::BpeTokenizer(std::string name, std::string pattern, std::vector<std::string> ranks,
                           std::vector<std::pair<std::string, uint32_t>> specials, std::string bos,
                           uint32_t vocab_size, const std::string& where)
    : name_(std::move(name)), bos_name_(std::move(bos)), specials_(std::move(specials)) {
  const char* w = where.c_str();
  pre_ = std::make_unique<PreTokenizer>(std::move(pattern));
  // Token table.
  size_t total = 0, used = 0;
  for (const auto& t : ranks) total += t.size(), used += !t.empty();
  arena_.reserve(total);
  tok_off_.resize(ranks.size());
  tok_len_.resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    tok_off_[i] = uint32_t(arena_.size());
    tok_len_[i] = uint32_t(ranks[i].size());
    arena_ += ranks[i];
  }
  size_t cap = 16;
  while (cap < used * 2) cap <<= 1;
  slots_.assign(cap, kEmpty);
  slot_tag_.assign(cap, 0);
  mask_ = cap - 1;
  for (uint32_t id = 0; id < ranks.size(); ++id) {
    if (ranks[id].empty()) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(ranks[id].data());
    const size_t n = ranks[id].size();
    if (lookup(p, n) != kNoRank)
      fail("%s: token %s appears twice (ranks %u and %u)", w, base64_encode(ranks[id]).c_str(), lookup(p, n), id);
    const uint64_t h = hash_bytes(p, n);
    uint64_t s = h & mask_;
    while (slots_[s] != kEmpty) s = (s + 1) & mask_;
    slots_[s] = id;
    slot_tag_[s] = uint32_t(h >> 32);
  }
  for (int b = 0; b < 256; ++b) {
    const uint8_t c = uint8_t(b);
    byte_rank_[b] = lookup(&c, 1);
    if (byte_rank_[b] == kNoRank) fail("%s: vocabulary lacks the single byte 0x%02x (a byte-level BPE needs all 256)", w, b);
  }
  // Special tokens.
  std::sort(specials_.begin(), specials_.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  uint32_t max_id = ranks.empty() ? 0 : uint32_t(ranks.size() - 1);
  bool bos_found = false;
  for (size_t i = 0; i < specials_.size(); ++i) {
    const auto& [sname, id] = specials_[i];
    if (sname.empty()) fail("%s: empty special token name", w);
    if (id < ranks.size() && !ranks[id].empty()) fail("%s: special token %s has id %u, already an ordinary token", w, sname.c_str(), id);
    if (i > 0 && specials_[i - 1].second == id) fail("%s: special tokens %s and %s share id %u", w, specials_[i - 1].first.c_str(), sname.c_str(), id);
    max_id = std::max(max_id, id);
    if (sname == bos_name_) bos_id_ = id, bos_found = true;
  }
  if (!bos_found) fail("%s: the BOS token %s is not among the special tokens", w, bos_name_.c_str());
  vocab_size_ = vocab_size ? vocab_size : max_id + 1;
  if (vocab_size_ < max_id + 1) fail("%s: vocab_size %u is smaller than the largest id %u + 1", w, vocab_size_, max_id);
  // Identity: a digest of everything that changes what encode/decode produce.
  Sha256 h;
  auto put = [&](std::string_view s) {
    const uint64_t n = s.size();
    h.update(&n, 8);
    h.update(s.data(), s.size());
  };
  put("nanotrain-bpe-identity-v1");
  put(pre_->pattern());
  put(bos_name_);
  const uint64_t vs = vocab_size_;
  h.update(&vs, 8);
  for (const auto& [sname, id] : specials_) {
    put(sname);
    h.update(&id, 4);
  }
  const uint64_t nr = ranks.size();
  h.update(&nr, 8);
  for (const auto& t : ranks) put(t);
  identity_ = h.finish();
}

BpeTokenizer::~BpeTokenizer() = default;

uint32_t BpeTokenizer::lookup(const uint8_t* p, size_t n) const {
  const uint64_t h = hash_bytes(p, n);
  const uint32_t tag = uint32_t(h >> 32);
  for (uint64_t s = h & mask_;; s = (s + 1) & mask_) {
    const uint32_t id = slots_[s];
    if (id == kEmpty) return kNoRank;
    if (slot_tag_[s] == tag && tok_len_[id] == n && std::memcmp(arena_.data() + tok_off_[id], p, n) == 0) return id;
  }
}

uint32_t BpeTokenizer::rank_of(std::string_view bytes) const {
  return lookup(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string_view BpeTokenizer::token(uint32_t id) const {
  if (id >= tok_len_.size()) return {};
  return std::string_view(arena_.data() + tok_off_[id], tok_len_[id]);
}

uint32_t BpeTokenizer::token_bytes(uint32_t id) const { return id < tok_len_.size() ? tok_len_[id] : 0; }

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<uint32_t>& out) const {
  const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
  const size_t n = piece.size();
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_rank_[p[0]]);
    return;
  }
  if (const uint32_t r = lookup(p, n); r != kNoRank) {
    out.push_back(r);
    return;
  }
  if (n > 96) return merge_long(p, n, out);
  // tiktoken's _byte_pair_merge: parts[i] = (start, rank of merging part i with part i+1).
  struct Part {
    uint32_t start, rank;
  };
  Part parts[100];
  size_t m = n + 1;
  uint32_t min_rank = kNoRank;
  size_t min_i = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    const uint32_t r = lookup(p + i, 2);
    parts[i] = {uint32_t(i), r};
    if (r < min_rank) min_rank = r, min_i = i;
  }
  parts[n - 1] = {uint32_t(n - 1), kNoRank};
  parts[n] = {uint32_t(n), kNoRank};
  auto get_rank = [&](size_t i) {
    return i + 3 < m ? lookup(p + parts[i].start, parts[i + 3].start - parts[i].start) : kNoRank;
  };
  while (min_rank != kNoRank) {
    const size_t i = min_i;
    if (i > 0) parts[i - 1].rank = get_rank(i - 1);
    parts[i].rank = get_rank(i);
    std::memmove(&parts[i + 1], &parts[i + 2], (m - i - 2) * sizeof(Part));
    --m;
    min_rank = kNoRank;
    for (size_t k = 0; k + 1 < m; ++k)
      if (parts[k].rank < min_rank) min_rank = parts[k].rank, min_i = k;
  }
  for (size_t k = 0; k + 1 < m; ++k) out.push_back(lookup(p + parts[k].start, parts[k + 1].start - parts[k].start));
}

// The same merge order for long pieces in O(n log n): a linked list of parts and a min-heap of
// (rank, start) with lazy invalidation; (rank, start) order is tiktoken's "lowest rank, leftmost".
void BpeTokenizer::merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  std::vector<uint32_t> next(n), prev(n);
  std::vector<uint8_t> alive(n, 1);
  for (size_t i = 0; i < n; ++i) next[i] = uint32_t(i + 1), prev[i] = uint32_t(i) - 1;
  struct Entry {
    uint32_t rank, start, end;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : start > o.start; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](uint32_t i) {
    const uint32_t j = next[i];
    if (j >= n) return;
    const uint32_t end = next[j];
    const uint32_t r = lookup(p + i, end - i);
    if (r != kNoRank) heap.push({r, i, end});
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    const uint32_t i = e.start;
    if (!alive[i] || next[i] >= n || next[next[i]] != e.end) continue;
    const uint32_t j = next[i];
    alive[j] = 0;
    next[i] = next[j];
    if (next[j] < n) prev[next[j]] = i;
    push(i);
    if (i > 0) push(prev[i]);
  }
  for (uint32_t i = 0; i < n; i = next[i]) out.push_back(lookup(p + i, next[i] - i));
}

void BpeTokenizer::encode(std::string_view text, std::vector<uint32_t>& out) const {
  PreTokenizer::Iterator it(*pre_, text);
  std::string_view piece;
  bool raw = false;
  while (it.next(&piece, &raw)) {
    if (raw) out.push_back(byte_rank_[uint8_t(piece[0])]);
    else encode_piece(piece, out);
  }
}

std::string BpeTokenizer::decode(std::span<const uint32_t> ids) const {
  std::string s;
  for (uint32_t id : ids) {
    if (id < tok_len_.size() && tok_len_[id] > 0) {
      s.append(arena_.data() + tok_off_[id], tok_len_[id]);
      continue;
    }
    auto it = std::lower_bound(specials_.begin(), specials_.end(), id, [](const auto& a, uint32_t v) { return a.second < v; });
    if (it == specials_.end() || it->second != id) fail("token id %u: not in the vocabulary of tokenizer %s", id, name_.c_str());
    s += it->first;
  }
  return s;
}

std::string BpeTokenizer::tiktoken_text() const {
  std::string s;
  s.reserve(arena_.size() * 2);
  for (uint32_t id = 0; id < tok_len_.size(); ++id) {
    if (tok_len_[id] == 0) continue;
    s += base64_encode(token(id));
    s += ' ';
    s += std::to_string(id);
    s += '\n';
  }
  return s;
}

std::string BpeTokenizer::sidecar_text() const {
  nlohmann::ordered_json j;
  j["format"] = "nanotrain-bpe";
  j["version"] = 1;
  j["name"] = name_;
  j["pattern"] = pre_->pattern();
  nlohmann::ordered_json sp = nlohmann::ordered_json::object();
  for (const auto& [sname, id] : specials_) sp[sname] = id;
  j["special_tokens"] = sp;
  j["bos"] = bos_name_;
  j["vocab_size"] = vocab_size_;
  j["tiktoken_sha256"] = to_hex(sha256(tiktoken_text()));
  j["identity"] = to_hex(identity_);
  return j.dump(2) + "\n";
}

void BpeTokenizer::save(const std::string& path) const {
  write_file_atomic(path, tiktoken_text());
  write_file_atomic(path + ".json", sidecar_text());
}

std::string BpeTokenizer::save_to_dir(const std::string& dir) const {
  save((std::filesystem::path(dir) / "tokenizer.tiktoken").string());
  return "tokenizer.tiktoken";
}

namespace {

// Parses "BASE64 RANK" lines (tiktoken) or "! OFFSET BASE64 BASE64 ..." lines (the compressed
// form in the npm package's encoder files) into ranks[id] = bytes.
std::vector<std::string> parse_ranks(std::string_view text, const std::string& path) {
  std::vector<std::string> ranks;
  size_t pos = 0, line_no = 0;
  // Ranks are dense in real files: a rank far beyond the number of tokens would only make the
  // table (and the model's vocabulary) huge, so it is refused before anything is allocated.
  const uint64_t max_rank = 2 * uint64_t(text.size()) + 1024;
  auto put = [&](uint64_t id, std::string bytes) {
    if (bytes.empty()) fail("%s:%zu: empty token", path.c_str(), line_no);
    if (id >= (uint64_t(1) << 31) || id >= max_rank)
      fail("%s:%zu: rank %llu is too large for a file of this size", path.c_str(), line_no, (unsigned long long)id);
    if (id >= ranks.size()) ranks.resize(id + 1);
    if (!ranks[id].empty()) fail("%s:%zu: rank %llu appears twice", path.c_str(), line_no, (unsigned long long)id);
    ranks[id] = std::move(bytes);
  };
  auto parse_u64 = [&](std::string_view s, uint64_t* v) {
    if (s.empty() || s.size() > 10) return false;
    *v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      *v = *v * 10 + uint64_t(c - '0');
    }
    return true;
  };
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string_view> f;
    for (size_t a = 0; a <= line.size();) {
      size_t b = line.find(' ', a);
      if (b == std::string_view::npos) b = line.size();
      f.push_back(line.substr(a, b - a));
      a = b + 1;
    }
    uint64_t v = 0;
    if (f.size() >= 2 && f[0] == "!") {
      if (!parse_u64(f[1], &v)) fail("%s:%zu: malformed line (bad rank offset)", path.c_str(), line_no);
      for (size_t k = 2; k < f.size(); ++k) {
        auto bytes = base64_decode(f[k]);
        if (!bytes) fail("%s:%zu: malformed line (invalid base64 token %zu)", path.c_str(), line_no, k - 1);
        put(v + (k - 2), std::move(*bytes));
      }
      continue;
    }
    if (f.size() != 2) fail("%s:%zu: malformed line (expected 'BASE64 RANK')", path.c_str(), line_no);
    auto bytes = base64_decode(f[0]);
    if (!bytes) fail("%s:%zu: malformed line (invalid base64 token)", path.c_str(), line_no);
    if (!parse_u64(f[1], &v)) fail("%s:%zu: malformed line (rank is not a number)", path.c_str(), line_no);
    put(v, std::move(*bytes));
  }
  if (ranks.empty()) fail("%s: no tokens in file", path.c_str());
  return ranks;
}

// An integer field in [0, 2^32): nlohmann's get<uint32_t>() would wrap negatives and cast
// out-of-range floats (undefined behaviour).
uint32_t json_u32(const nlohmann::json& v, const std::string& path, const char* field) {
  if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<uint64_t>() > 0xFFFFFFFFull : v.get<int64_t>() < 0))
    fail("%s: %s must be an integer in [0, 2^32)", path.c_str(), field);
  return uint32_t(v.get<uint64_t>());
}

nlohmann::json parse_json_text(const std::string& text, const std::string& path) {
  try {
    return parse_json(text, path);
  } catch (const nlohmann::json::exception& e) {
    fail("%s: not valid JSON: %s", path.c_str(), e.what());
  }
}

std::vector<std::pair<std::string, uint32_t>> parse_specials(const nlohmann::json& j, const std::string& path) {
  std::vector<std::pair<std::string, uint32_t>> out;
  if (!j.is_object()) fail("%s: special tokens must be an object {name: id}", path.c_str());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_unsigned()) fail("%s: special token %s: id is not a non-negative integer", path.c_str(), it.key().c_str());
    const uint64_t id = it.value().get<uint64_t>();
    if (id >= (uint64_t(1) << 31)) fail("%s: special token %s: id %llu is too large", path.c_str(), it.key().c_str(), (unsigned long long)id);
    out.push_back({it.key(), uint32_t(id)});
  }
  return out;
}

}  // namespace

std::unique_ptr<BpeTokenizer> BpeTokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::string stem = fs::path(path).filename().string();
  if (fs::path(path).extension() == ".json") {
    const std::string text = read_file(path);
    nlohmann::json j = parse_json_text(text, path);
    if (j.is_object() && j.value("format", "") == "nanotrain-bpe") {
      // A sidecar: load the .tiktoken next to it.
      if (stem.size() > 5) return load(path.substr(0, path.size() - 5));
    }
    return from_encoder_json(text, path);
  }
  // A .tiktoken file with its sidecar.
  const std::string text = read_file(path);
  const std::string side_path = path + ".json";
  if (!fs::exists(side_path)) {
    parse_ranks(text, path);  // a broken .tiktoken is reported first
    fail("%s: missing (the sidecar of %s with the pattern and special tokens)", side_path.c_str(), path.c_str());
  }
  return from_tiktoken(text, read_file(side_path), path);
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_encoder_json(const std::string& text, const std::string& path) {
  namespace fs = std::filesystem;
  nlohmann::json j = parse_json_text(text, path);
  if (!j.is_object() || !j.contains("pat_str") || !j.contains("bpe_ranks") || !j.contains("special_tokens"))
    fail("%s: not a tokenizer (expected a tiktoken encoder JSON with pat_str, special_tokens, bpe_ranks)", path.c_str());
  try {
    auto ranks = parse_ranks(j.at("bpe_ranks").get<std::string>(), path);
    auto specials = parse_specials(j.at("special_tokens"), path);
    std::string bos;
    for (const auto& [n, id] : specials)
      if (n == "<|endoftext|>") bos = n;
    if (bos.empty() && !specials.empty()) bos = specials.front().first;
    if (bos.empty()) fail("%s: no special token to use as BOS", path.c_str());
    const uint32_t nv = j.contains("explicit_n_vocab") ? json_u32(j.at("explicit_n_vocab"), path, "explicit_n_vocab") : 0;
    return std::make_unique<BpeTokenizer>(fs::path(path).stem().string(), j.at("pat_str").get<std::string>(), std::move(ranks),
                                          std::move(specials), bos, nv, path);
  } catch (const nlohmann::json::exception& e) {
    fail("%s: malformed tokenizer JSON: %s", path.c_str(), e.what());
  }
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::from_tiktoken(const std::string& text, const std::string& sidecar,
                                                          const std::string& path) {
  namespace fs = std::filesystem;
  auto ranks = parse_ranks(text, path);
  const std::string side_path = path + ".json";
  nlohmann::json j = parse_json_text(sidecar, side_path);
  try {
    if (!j.is_object() || j.value("format", "") != "nanotrain-bpe") fail("%s: not a nanotrain tokenizer sidecar (format)", side_path.c_str());
    if (json_u32(j.at("version"), side_path, "version") != 1) fail("%s: unsupported sidecar version", side_path.c_str());
    if (j.contains("tiktoken_sha256") && j.at("tiktoken_sha256").get<std::string>() != to_hex(sha256(text)))
      fail("%s: does not belong to %s (tiktoken_sha256 differs: the .tiktoken file was changed)", side_path.c_str(), path.c_str());
    auto tok = std::make_unique<BpeTokenizer>(j.value("name", fs::path(path).stem().string()), j.at("pattern").get<std::string>(),
                                              std::move(ranks), parse_specials(j.at("special_tokens"), side_path),
                                              j.at("bos").get<std::string>(), j.contains("vocab_size") ? json_u32(j.at("vocab_size"), side_path, "vocab_size") : 0u, path);
    return tok;
  } catch (const nlohmann::json::exception& e) {
    fail("%s: malformed sidecar: %s", side_path.c_str(), e.what());
  }
}

}  // namespace nt
