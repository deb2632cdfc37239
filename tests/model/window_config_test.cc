// SPDX-License-Identifier: MIT
// --window-pattern and --short-window: which window each layer gets, the checks and their
// messages, config.json without the fields, and the FLOPs a window saves.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/kernels.h"
#include "model/config.h"

namespace nt {
namespace {

ModelConfig with_pattern(const std::string& pattern, int depth, int seq_len) {
  ModelConfig c;
  c.window_pattern = pattern, c.depth = depth, c.seq_len = seq_len;
  return c;
}

std::vector<int64_t> windows(const ModelConfig& c) {
  std::vector<int64_t> w;
  for (int l = 0; l < c.depth; ++l) w.push_back(c.attention_window(l));
  return w;
}

// The message of the nt::Error that validate() throws ("" when it passes).
std::string error_of(const ModelConfig& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WindowPattern, TiledOverTheLayersLastAlwaysFull) {
  const int64_t F = kFullWindow;
  EXPECT_EQ(windows(with_pattern("SSSL", 6, 2048)), (std::vector<int64_t>{512, 512, 512, F, 512, F}));
  EXPECT_EQ(windows(with_pattern("S", 3, 2048)), (std::vector<int64_t>{512, 512, F}));
  EXPECT_EQ(windows(with_pattern("L", 4, 2048)), (std::vector<int64_t>{F, F, F, F}));
  EXPECT_EQ(windows(with_pattern("LS", 5, 2048)), (std::vector<int64_t>{F, 512, F, 512, F}));
  EXPECT_EQ(windows(with_pattern("S", 1, 2048)), (std::vector<int64_t>{F}));
}

TEST(WindowPattern, ShortWindowIsAQuarterOfTheContextInWholeBlocks) {
  EXPECT_EQ(with_pattern("S", 2, 2048).short_window_keys(), 512);
  EXPECT_EQ(with_pattern("S", 2, 256).short_window_keys(), 128);
  EXPECT_EQ(with_pattern("S", 2, 100).short_window_keys(), 128);
  EXPECT_EQ(with_pattern("S", 2, 2049).short_window_keys(), 640);
  ModelConfig c = with_pattern("S", 2, 2048);
  c.short_window = 77;
  EXPECT_EQ(c.attention_window(0), 77);
  EXPECT_TRUE(c.has_short_windows());
  c.short_window = 2047;  // covers every key: no layer is short
  EXPECT_FALSE(c.has_short_windows());
}

TEST(WindowPattern, BadPatternsAreRefusedNamingTheFlag) {
  for (const char* bad : {"", "SXL", "ssl", "S L"}) {
    const std::string e = error_of(with_pattern(bad, 4, 256));
    EXPECT_NE(e.find("--window-pattern"), std::string::npos) << "'" << bad << "': " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_EQ(error_of(with_pattern("SSSL", 4, 256)), "");
  ModelConfig c = with_pattern("S", 4, 256);
  c.short_window = -1;
  EXPECT_NE(error_of(c).find("--short-window"), std::string::npos);
}

TEST(WindowPattern, StoredInTheConfigAndOldConfigsAreFull) {
  ModelConfig c = with_pattern("SSL", 4, 256);
  c.short_window = 40;
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("window_pattern"), "SSL");
  EXPECT_EQ(j.at("short_window"), 40);
  const ModelConfig back = ModelConfig::from_json(j);
  EXPECT_EQ(back.window_pattern, "SSL");
  EXPECT_EQ(back.short_window, 40);
  nlohmann::json old = j;
  old.erase("window_pattern"), old.erase("short_window");
  const ModelConfig o = ModelConfig::from_json(old);
  EXPECT_EQ(o.window_pattern, "L");
  EXPECT_FALSE(o.has_short_windows());
  nlohmann::json bad = j;
  bad["window_pattern"] = "SQ";
  EXPECT_THROW(ModelConfig::from_json(bad), Error);
}

// Attention FLOPs: 12 H D times the mean keys a query sees, T / 2 causal; a window W < T cuts
// the triangle below its band, (T - W)^2 / 2 of the T^2 / 2 pairs.
TEST(WindowPattern, FlopsCountTheKeysAWindowSees) {
  ModelConfig full = with_pattern("L", 8, 2048), windowed = with_pattern("SSSL", 8, 2048);
  full.d_model = windowed.d_model = 512, full.n_head = windowed.n_head = 4;
  full.n_kv_head = windowed.n_kv_head = 4, full.head_dim = windowed.head_dim = 128;
  const double per_layer_full = 12.0 * 4 * 128 * 1024;
  const double per_layer_short = 12.0 * 4 * 128 * (1024 - 1536.0 * 1536 / 4096);  // 448 keys a query
  const double saved = flops_per_token(full, 2048) - flops_per_token(windowed, 2048);
  EXPECT_DOUBLE_EQ(saved, 6 * (per_layer_full - per_layer_short));  // layers 0-2 and 4-6 are short
  EXPECT_DOUBLE_EQ(attention_keys_per_query(kFullWindow, 2048), 1024);
  EXPECT_DOUBLE_EQ(attention_keys_per_query(2048, 2048), 1024);
  EXPECT_DOUBLE_EQ(attention_keys_per_query(0, 2048), 0);
  EXPECT_NEAR(attention_keys_per_query(512, 2048), 448, 1e-9);
}

}  // namespace
}  // namespace nt
