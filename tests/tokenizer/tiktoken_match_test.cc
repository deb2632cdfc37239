// SPDX-License-Identifier: MIT
// nanotrain's BPE encoder against the real tiktoken (npm tiktoken@1.0.22, WebAssembly, run with
// node): identical token ids on varied text, for tiktoken's encodings and for a tokenizer trained
// here (nanochat's pattern). Needs node and `npm ci --prefix tools/tiktoken`; fails without them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "tokenizer/base64.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/bpe_train.h"
#include "varied_text.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

const std::string kTools = std::string(NT_SOURCE_DIR) + "/tools/tiktoken";

std::string tmp_dir() {
  const fs::path d = fs::path(NT_BINARY_DIR) / "test_tmp" / "tiktoken_match";
  fs::create_directories(d);
  return d.string();
}

void require_node() {
  ASSERT_EQ(std::system("node --version > /dev/null 2>&1"), 0) << "node (20+) is required for the tiktoken comparison";
  ASSERT_TRUE(fs::exists(kTools + "/node_modules/tiktoken/package.json"))
      << "the npm package tiktoken is missing: run `npm ci --prefix tools/tiktoken`";
}

// Runs tools/tiktoken/encode.cjs on the texts; returns tiktoken's ids per text.
std::vector<std::vector<uint32_t>> tiktoken_ids(const nlohmann::json& spec, const std::vector<std::string>& texts,
                                                const std::string& tag) {
  nlohmann::json j = spec;
  j["cases"] = nlohmann::json::array();
  for (const auto& t : texts) j["cases"].push_back(base64_encode(t));
  const std::string in = tmp_dir() + "/" + tag + "_cases.json", out = tmp_dir() + "/" + tag + "_ids.json";
  write_file_atomic(in, j.dump());
  fs::remove(out);
  const std::string cmd = "node '" + kTools + "/encode.cjs' '" + in + "' '" + out + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  if (!fs::exists(out)) return {};
  return nlohmann::json::parse(read_file(out)).get<std::vector<std::vector<uint32_t>>>();
}

std::string hex_head(const std::string& s) {
  std::string h;
  for (size_t i = 0; i < s.size() && i < 48; ++i) {
    char b[4];
    std::snprintf(b, sizeof b, "%02x", uint8_t(s[i]));
    h += b;
  }
  return h + (s.size() > 48 ? "..." : "");
}

void expect_same(const Tokenizer& tok, const std::vector<std::string>& texts, const std::vector<std::vector<uint32_t>>& ref) {
  ASSERT_EQ(ref.size(), texts.size());
  size_t bad = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<uint32_t> ids;
    tok.encode(texts[i], ids);
    if (ids != ref[i]) {
      size_t k = 0;
      while (k < ids.size() && k < ref[i].size() && ids[k] == ref[i][k]) ++k;
      ADD_FAILURE() << "text " << i << " (" << texts[i].size() << " bytes, hex " << hex_head(texts[i]) << "): ids differ at token " << k
                    << " of " << ids.size() << " (nanotrain) vs " << ref[i].size() << " (tiktoken)";
      if (++bad > 10) return;
    }
    EXPECT_EQ(tok.decode(ids), texts[i]) << "round trip of text " << i;
  }
}

class TiktokenEncodings : public ::testing::TestWithParam<const char*> {};

TEST_P(TiktokenEncodings, IdenticalIds) {
  require_node();
  const std::string name = GetParam();
  const auto tok = BpeTokenizer::load(kTools + "/node_modules/tiktoken/encoders/" + name + ".json");
  // Valid UTF-8 (what tiktoken accepts), then text with invalid bytes (the documented rule).
  auto texts = testing::varied_texts(0x7469 + name.size(), 260, false);
  auto bad = testing::varied_texts(0x1234 + name.size(), 40, true);
  texts.insert(texts.end(), bad.end() - 30, bad.end());
  expect_same(*tok, texts, tiktoken_ids({{"encoding", name}}, texts, name));
}

INSTANTIATE_TEST_SUITE_P(All, TiktokenEncodings, ::testing::Values("gpt2", "cl100k_base", "o200k_base", "p50k_base"));

TEST(TiktokenMatch, TrainedTokenizerWithNanochatPattern) {
  require_node();
  // Train on varied text so that merges cover many scripts, then compare on unseen text.
  auto train = testing::varied_texts(99, 400, false);
  BpeTrainOptions opt;
  opt.vocab_size = 1200;
  auto tok = train_bpe(train, opt);
  const std::string path = tmp_dir() + "/trained.tiktoken";
  tok->save(path);
  auto texts = testing::varied_texts(4242, 200, true);
  expect_same(*tok, texts, tiktoken_ids({{"tiktoken", path}}, texts, "trained"));
}

}  // namespace
}  // namespace nt
