// SPDX-License-Identifier: MIT
// Checkpoints: a round trip restores every tensor and the trainer state bit for bit; a changed
// byte anywhere fails the checksum; files with a valid checksum but impossible contents (a state
// field out of range, another model's shape, a missing tensor) are errors naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/files.h"
#include "model/config.h"
#include "model/params.h"
#include "optim/muon_variants.h"
#include "test_util.h"
#include "train/checkpoint.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

ModelConfig small_model(int depth = 1) {
  ShapeFlags f;
  f.preset = "tiny";
  f.depth = depth;
  f.d_model = 32;
  f.n_head = 2;
  f.n_kv_head = 1;
  f.head_dim = 16;
  f.seq_len = 16;
  return resolve_model_config(f, 64);
}

TrainState some_state() {
  TrainState s;
  s.step = 17;
  s.optimizer_steps = 17;
  s.lr_scale = 0.5;
  s.train_seconds = 12.25;
  s.recent_step_seconds = {0.5, 0.25, 0.75};
  s.eval_seconds = 1;
  s.save_seconds = 2;
  s.data_seconds = 0.125;
  s.last_eval_at = 10;
  s.last_save_at = 11;
  s.core_seconds = 3.5;
  s.last_core_at = 9;
  s.rollbacks = 1;
  s.metrics_lines = 9;
  s.loader = {{"kind", "stream"}, {"batches_done", 17}, {"offset", 3}};
  return s;
}

struct Saved {
  ModelConfig mc = small_model();
  ParamArena params{mc};
  std::vector<float> m, v;
  std::string path;
  explicit Saved(const std::string& name) {
    init_params(params, 7);
    m.resize(params.numel());
    v.resize(params.numel());
    for (size_t i = 0; i < m.size(); ++i) {
      m[i] = float(i) * 1e-3f;
      v[i] = float(i % 97) * 1e-5f;
    }
    path = checkpoint_path(test::tmp_dir("checkpoint/" + name), 17);
    write_checkpoint(path, mc, nlohmann::json{{"flags", "as given"}}, some_state(), params, m.data(), v.data());
  }
  std::vector<uint8_t> bytes() const {
    const std::string s = read_file(path);
    return {s.begin(), s.end()};
  }
};

// Writes `bytes` with its checksum set to the correct value, as a deliberate forger would.
std::string write_resummed(const std::string& path, std::vector<uint8_t> bytes) {
  size_t digits = 0;
  const std::string sum = checkpoint_checksum(bytes.data(), bytes.size(), &digits);
  EXPECT_EQ(sum.size(), 64u);
  std::memcpy(bytes.data() + digits, sum.data(), sum.size());
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
  return path;
}

// Replaces the first occurrence of `from` in the header with `to` of the same length.
std::vector<uint8_t> patched(std::vector<uint8_t> b, const std::string& from, const std::string& to) {
  EXPECT_EQ(from.size(), to.size());
  std::string s(b.begin(), b.end());
  const size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) std::memcpy(b.data() + p, to.data(), to.size());
  return b;
}

TEST(Checkpoint, RoundTripRestoresTensorsAndState) {
  Saved s("roundtrip");
  const CheckpointData ck = read_checkpoint(s.path);
  EXPECT_EQ(ck.model.to_json(), s.mc.to_json());
  EXPECT_EQ(ck.train, (nlohmann::json{{"flags", "as given"}}));
  EXPECT_EQ(ck.state.to_json(), some_state().to_json());
  ParamArena p2(s.mc);
  std::vector<float> m2(p2.numel(), -1), v2(p2.numel(), -1);
  restore_checkpoint(ck, p2, m2.data(), v2.data());
  EXPECT_EQ(std::memcmp(p2.data.data(), s.params.data.data(), p2.numel() * sizeof(float)), 0);
  EXPECT_EQ(m2, s.m);
  // Muon's matrices keep only NorMuon's factored second moment, one float per row (tall or
  // square) or column, at the start of their part of v: the rest of it is not restored.
  for (size_t i = 0; i < p2.specs.size(); ++i) {
    const auto& spec = p2.specs[i];
    const size_t off = p2.offsets[i], n = size_t(spec.numel());
    const size_t kept = spec.group == ParamGroup::kMatrix ? size_t(normuon_state_size(spec.rows, spec.cols)) : n;
    for (size_t k = 0; k < n; ++k) ASSERT_EQ(v2[off + k], k < kept ? s.v[off + k] : -1.0f) << spec.name << " " << k;
  }
  // A checkpoint without the matrices' second moments (written before NorMuon) restores them as zeros.
  CheckpointData old = ck;
  for (const auto& spec : p2.specs)
    if (spec.group == ParamGroup::kMatrix) old.file.tensors.erase("opt.v." + spec.name);
  std::fill(v2.begin(), v2.end(), -1.0f);
  restore_checkpoint(old, p2, m2.data(), v2.data());
  for (size_t i = 0; i < p2.specs.size(); ++i) {
    if (p2.specs[i].group == ParamGroup::kMatrix) {
      EXPECT_EQ(v2[p2.offsets[i]], 0.0f) << p2.specs[i].name;
    }
  }
}

TEST(Checkpoint, AnyChangedByteFailsTheChecksum) {
  Saved s("bitflip");
  const auto good = s.bytes();
  // Positions in the length prefix, the header, and the tensor data.
  for (size_t pos : {size_t(3), size_t(40), good.size() / 2, good.size() - 1}) {
    auto b = good;
    b[pos] ^= 0x10;
    const std::string msg = test::error_of([&] { (void)parse_checkpoint(b.data(), b.size(), "ck.safetensors"); });
    EXPECT_NE(msg.find("ck.safetensors"), std::string::npos) << pos << ": " << msg;
    EXPECT_FALSE(msg.empty()) << pos;
  }
  for (size_t len : {size_t(0), size_t(5), size_t(8), good.size() / 3, good.size() - 1}) {
    const std::string msg = test::error_of([&] { (void)parse_checkpoint(good.data(), len, "ck.safetensors"); });
    EXPECT_NE(msg.find("ck.safetensors"), std::string::npos) << len << ": " << msg;
  }
}

TEST(Checkpoint, ImpossibleStateWithValidChecksumIsAnError) {
  Saved s("badstate");
  const auto good = s.bytes();
  const std::string dir = fs::path(s.path).parent_path().string();
  // The metadata stores the state as an escaped JSON string inside the header.
  const struct {
    std::string from, to, expect;
  } cases[] = {
      {"\\\"step\\\":17", "\\\"step\\\":-1", "\"step\" is negative"},
      {"\\\"lr_scale\\\":0.5", "\\\"lr_scale\\\":5.0", "\"lr_scale\" must be in (0, 1]"},
      {"\\\"train_seconds\\\":12.25", "\\\"train_seconds\\\":-12.5", "\"train_seconds\" = -12.5"},
      {"\\\"rollbacks\\\":1", "\\\"rollbackz\\\":1", "checkpoint state is incomplete"},
      {"\\\"eval_seconds\\\":1.0", "\\\"eval_seconds\\\":[1]", "\"eval_seconds\" is not a number"},
  };
  for (const auto& c : cases) {
    const std::string path = write_resummed(dir + "/forged.safetensors", patched(good, c.from, c.to));
    const std::string msg = test::error_of([&] { (void)read_checkpoint(path); });
    EXPECT_NE(msg.find("forged.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.to << " -> " << msg;
  }
}

TEST(Checkpoint, StateWithoutCoreFieldsReads) {
  nlohmann::json j = some_state().to_json();
  EXPECT_EQ(TrainState::from_json(j, "ck").last_core_at, 9);
  EXPECT_EQ(TrainState::from_json(j, "ck").core_seconds, 3.5);
  j.erase("core_seconds");
  j.erase("last_core_at");
  const TrainState s = TrainState::from_json(j, "ck");
  EXPECT_EQ(s.core_seconds, 0);
  EXPECT_EQ(s.last_core_at, 0);
  j["last_core_at"] = -1;
  EXPECT_NE(test::error_of([&] { (void)TrainState::from_json(j, "ck"); }).find("\"last_core_at\" = -1"),
            std::string::npos);
}

TEST(Checkpoint, AnotherModelsShapeIsAnError) {
  Saved s("shape");
  const CheckpointData ck = read_checkpoint(s.path);
  ParamArena bigger(small_model(2));
  std::vector<float> m(bigger.numel()), v(bigger.numel());
  const std::string msg = test::error_of([&] { restore_checkpoint(ck, bigger, m.data(), v.data()); });
  EXPECT_NE(msg.find(s.path), std::string::npos) << msg;
  EXPECT_NE(msg.find("lacks tensor"), std::string::npos) << msg;
}

TEST(Checkpoint, NewestValidSkipsCorruptAndPrunes) {
  Saved s("newest");
  const std::string run = fs::path(s.path).parent_path().parent_path().string();
  // A newer checkpoint that is corrupt, and a stale temporary file.
  auto b = s.bytes();
  b[b.size() / 2] ^= 1;
  const std::string newer = checkpoint_path(run, 18);
  write_file_atomic(newer, std::string(b.begin(), b.end()));
  write_file_atomic(fs::path(s.path).parent_path().string() + "/step-00000019.safetensors.tmp", "partial");
  static std::vector<std::string> warnings;
  warnings.clear();
  const CheckpointData ck = newest_valid_checkpoint(run, [](const std::string& w) { warnings.push_back(w); });
  EXPECT_EQ(ck.path, s.path);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("checksum mismatch"), std::string::npos) << warnings[0];
  prune_checkpoints(run, 1);
  EXPECT_EQ(list_checkpoints(run), std::vector<std::string>{newer});
  EXPECT_FALSE(fs::exists(fs::path(s.path).parent_path() / "step-00000019.safetensors.tmp"));
}

}  // namespace
}  // namespace nt
