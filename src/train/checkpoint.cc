// SPDX-License-Identifier: MIT
#include "train/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "core/sha256.h"
#include "optim/muon_variants.h"

namespace nt {

namespace {

namespace fs = std::filesystem;
constexpr const char* kChecksumKey = "\"checksum\":\"";
const std::string kZeroHex(64, '0');

// The shape of a tensor's second moment: the parameter's own for AdamW; for Muon's matrices
// NorMuon's factored one, (rows, 1) for tall or square matrices, else (1, cols), kept at the
// start of the matrix's part of v.
std::pair<int64_t, int64_t> second_moment_shape(const ParamSpec& s) {
  if (s.group != ParamGroup::kMatrix) return {s.rows, s.cols};
  const bool per_row = normuon_state_size(s.rows, s.cols) == s.rows;
  return per_row ? std::pair<int64_t, int64_t>{s.rows, 1} : std::pair<int64_t, int64_t>{1, s.cols};
}

std::string checkpoints_dir(const std::string& run_dir) { return (fs::path(run_dir) / "checkpoints").string(); }

// Position of the checksum's hex digits inside the header text, or npos.
size_t checksum_pos(std::string_view header) {
  const size_t p = header.find(kChecksumKey);
  if (p == std::string_view::npos) return p;
  const size_t h = p + std::strlen(kChecksumKey);
  return h + 64 <= header.size() ? h : std::string_view::npos;
}

}  // namespace

std::string checkpoint_path(const std::string& run_dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step-%08lld.safetensors", (long long)step);
  return (fs::path(checkpoints_dir(run_dir)) / name).string();
}

void write_checkpoint(const std::string& path, const ModelConfig& model, const nlohmann::json& train,
                      const TrainState& state, const ParamArena& params, const float* m, const float* v) {
  make_dirs(fs::path(path).parent_path().string());
  // The tensors in file order, with their sources.
  struct Entry {
    std::string name;
    const float* data;
    int64_t rows, cols;
  };
  std::vector<Entry> entries;
  for (size_t i = 0; i < params.specs.size(); ++i) {
    const auto& s = params.specs[i];
    const size_t off = params.offsets[i];
    entries.push_back({"param." + s.name, params.tensor(i), s.rows, s.cols});
    entries.push_back({"opt.m." + s.name, m + off, s.rows, s.cols});
    const auto [vr, vc] = second_moment_shape(s);
    entries.push_back({"opt.v." + s.name, v + off, vr, vc});
  }
  nlohmann::ordered_json h;
  h["__metadata__"] = {{"format", "nanotrain-checkpoint"}, {"version", "1"}, {"model", model.to_json().dump()},
                       {"train", train.dump()}, {"state", state.to_json().dump()}, {"checksum", kZeroHex}};
  size_t off = 0;
  for (const auto& e : entries) {
    const size_t bytes = size_t(e.rows * e.cols) * sizeof(float);
    h[e.name] = {{"dtype", "F32"}, {"shape", {e.rows, e.cols}}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string hs = h.dump();
  while (hs.size() % 8 != 0) hs.push_back(' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(hs.size()) >> (8 * i));
  const size_t pos = checksum_pos(hs);
  NT_CHECK(pos != std::string::npos, "checksum placeholder missing from the checkpoint header");

  AtomicFile out(path);
  Sha256 hash;
  out.write(len, 8);
  hash.update(len, 8);
  out.write(hs);
  hash.update(hs.data(), hs.size());
  for (const auto& e : entries) {
    const size_t bytes = size_t(e.rows * e.cols) * sizeof(float);
    out.write(e.data, bytes);
    hash.update(e.data, bytes);
  }
  const std::string hex = to_hex(hash.finish());
  out.write_at(8 + pos, hex.data(), hex.size());
  out.commit();
}

std::string checkpoint_checksum(const uint8_t* bytes, size_t size, size_t* digits_offset) {
  if (digits_offset) *digits_offset = std::string::npos;
  if (size < 8) return {};
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= uint64_t(bytes[i]) << (8 * i);
  if (hlen > size - 8) return {};
  std::string header(reinterpret_cast<const char*>(bytes) + 8, size_t(hlen));
  const size_t pos = checksum_pos(header);
  if (pos == std::string::npos) return {};
  header.replace(pos, 64, kZeroHex);
  Sha256 hash;
  hash.update(bytes, 8);
  hash.update(header.data(), header.size());
  hash.update(bytes + 8 + hlen, size - 8 - size_t(hlen));
  if (digits_offset) *digits_offset = 8 + pos;
  return to_hex(hash.finish());
}

CheckpointData read_checkpoint(const std::string& path) {
  MappedFile f(path);
  return parse_checkpoint(f.data(), f.size(), path);
}

CheckpointData parse_checkpoint(const uint8_t* bytes, size_t size, const std::string& name) {
  const char* p = name.c_str();
  if (size < 8) fail("%s: not a checkpoint (too short)", p);
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= uint64_t(bytes[i]) << (8 * i);
  if (hlen > size - 8) fail("%s: truncated or corrupt checkpoint (header length)", p);
  size_t digits = 0;
  const std::string expected = checkpoint_checksum(bytes, size, &digits);
  if (expected.empty()) fail("%s: not a nanotrain checkpoint (no checksum)", p);
  if (std::memcmp(bytes + digits, expected.data(), expected.size()) != 0)
    fail("%s: corrupt checkpoint (checksum mismatch)", p);
  CheckpointData ck;
  ck.path = name;
  ck.file = parse_safetensors(bytes, size, name);
  const auto& md = ck.file.metadata;
  auto get = [&](const char* k) -> const std::string& {
    auto it = md.find(k);
    if (it == md.end()) fail("%s: checkpoint metadata lacks \"%s\"", p, k);
    return it->second;
  };
  if (get("format") != "nanotrain-checkpoint") fail("%s: not a nanotrain checkpoint", p);
  if (get("version") != "1") fail("%s: checkpoint version %s is not supported (expected 1)", p, get("version").c_str());
  nlohmann::json state;
  try {
    ck.model = ModelConfig::from_json(parse_json(get("model"), "its model metadata"));
    ck.train = parse_json(get("train"), "its train metadata");
    state = parse_json(get("state"), "its state metadata");
  } catch (const nlohmann::json::exception&) {
    fail("%s: checkpoint metadata is not valid JSON", p);
  } catch (const Error& e) {
    fail("%s: %s", p, e.what());
  }
  ck.state = TrainState::from_json(state, name);
  return ck;
}

void restore_checkpoint(const CheckpointData& ck, ParamArena& params, float* m, float* v) {
  // optional: a matrix's NorMuon state, which checkpoints written without it lack (all zeros then).
  auto copy = [&](const std::string& name, float* dst, int64_t rows, int64_t cols, bool optional) {
    auto it = ck.file.tensors.find(name);
    if (it == ck.file.tensors.end()) {
      if (optional) return std::fill(dst, dst + rows * cols, 0.0f);
      fail("%s: checkpoint lacks tensor %s", ck.path.c_str(), name.c_str());
    }
    const StTensor& t = it->second;
    if (t.dtype != "F32" || t.shape != std::vector<int64_t>{rows, cols} ||
        t.bytes.size() != size_t(rows * cols) * sizeof(float))
      fail("%s: tensor %s does not have the model's shape (%lld, %lld)", ck.path.c_str(), name.c_str(),
           (long long)rows, (long long)cols);
    std::memcpy(dst, t.bytes.data(), t.bytes.size());
  };
  for (size_t i = 0; i < params.specs.size(); ++i) {
    const auto& s = params.specs[i];
    copy("param." + s.name, params.tensor(i), s.rows, s.cols, false);
    copy("opt.m." + s.name, m + params.offsets[i], s.rows, s.cols, false);
    const auto [vr, vc] = second_moment_shape(s);
    copy("opt.v." + s.name, v + params.offsets[i], vr, vc, s.group == ParamGroup::kMatrix);
  }
}

std::vector<std::string> list_checkpoints(const std::string& run_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints_dir(run_dir), ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step-", 0) == 0 && e.path().extension() == ".safetensors") out.push_back(e.path().string());
  }
  std::sort(out.rbegin(), out.rend());  // zero-padded step numbers: lexical order is step order
  return out;
}

CheckpointData newest_valid_checkpoint(const std::string& run_dir, void (*warn)(const std::string&)) {
  const auto all = list_checkpoints(run_dir);
  if (all.empty()) fail("--resume %s: no checkpoints in %s", run_dir.c_str(), checkpoints_dir(run_dir).c_str());
  for (const auto& path : all) {
    try {
      return read_checkpoint(path);
    } catch (const Error& e) {
      warn(std::string("skipping ") + e.what());
    }
  }
  fail("--resume %s: no valid checkpoint (all %zu failed verification)", run_dir.c_str(), all.size());
}

void prune_checkpoints(const std::string& run_dir, int keep) {
  const auto all = list_checkpoints(run_dir);
  for (size_t i = size_t(std::max(keep, 1)); i < all.size(); ++i) fs::remove(all[i]);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints_dir(run_dir), ec))
    if (e.path().extension() == ".tmp") fs::remove(e.path(), ec);
}

}  // namespace nt
