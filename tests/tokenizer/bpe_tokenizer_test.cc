// SPDX-License-Identifier: MIT
// BPE tokenizer: training determinism, exact round trip for any bytes, the .tiktoken + sidecar
// files, and one-line errors for broken files.
#include <gtest/gtest.h>

#include <omp.h>

#include <filesystem>
#include <functional>

#include "core/check.h"
#include "core/files.h"
#include "core/rng.h"
#include "tokenizer/base64.h"
#include "tokenizer/bpe_tokenizer.h"
#include "test_util.h"
#include "tokenizer/bpe_train.h"
#include "varied_text.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

std::string tmp_dir() {
  const fs::path d = fs::path(NT_BINARY_DIR) / "test_tmp" / "bpe_tokenizer";
  fs::create_directories(d);
  return d.string();
}

std::unique_ptr<BpeTokenizer> small_tokenizer(uint32_t vocab = 600) {
  BpeTrainOptions opt;
  opt.vocab_size = vocab;
  return train_bpe(testing::varied_texts(7, 300, false), opt);
}

using test::error_of;

TEST(Base64, RoundTripAndRejects) {
  Rng rng(1);
  for (int n = 0; n < 40; ++n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += char(rng.below(256));
    if (s.empty()) continue;
    auto back = base64_decode(base64_encode(s));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
  }
  EXPECT_EQ(base64_encode("hi"), "aGk=");
  EXPECT_FALSE(base64_decode("aGk").has_value());
  EXPECT_FALSE(base64_decode("a*k=").has_value());
  EXPECT_FALSE(base64_decode("a=k=").has_value());
}

TEST(BpeTrain, ShapeAndSpecialTokens) {
  auto tok = small_tokenizer(600);
  const auto& sp = nanochat_special_tokens();
  EXPECT_EQ(tok->vocab_size(), 600u);
  EXPECT_EQ(tok->num_ranks(), 600u - sp.size());
  EXPECT_EQ(tok->bos_id(), 600u - sp.size());
  EXPECT_EQ(tok->decode(std::vector<uint32_t>{tok->bos_id()}), "<|bos|>");
  EXPECT_EQ(tok->token_bytes(tok->bos_id()), 0u);
  EXPECT_EQ(tok->token_bytes(uint32_t('a')), 1u);
  for (uint32_t id = 256; id < tok->num_ranks(); ++id) EXPECT_EQ(tok->token_bytes(id), tok->token(id).size());
  // Ordinary text never yields a special token, even when it spells one.
  std::vector<uint32_t> ids;
  tok->encode("<|bos|> hello <|user_start|>", ids);
  for (uint32_t id : ids) EXPECT_LT(id, tok->num_ranks());
}

TEST(BpeTrain, DeterministicAcrossRunsAndThreads) {
  const auto docs = testing::varied_texts(7, 300, false);
  BpeTrainOptions opt;
  opt.vocab_size = 700;
  auto a = train_bpe(docs, opt);
  omp_set_num_threads(1);
  auto b = train_bpe(docs, opt);
  omp_set_num_threads(2);
  EXPECT_EQ(a->tiktoken_text(), b->tiktoken_text());
  EXPECT_EQ(a->sidecar_text(), b->sidecar_text());
  EXPECT_EQ(a->identity(), b->identity());
  opt.vocab_size = 701;
  EXPECT_NE(train_bpe(docs, opt)->identity(), a->identity());
}

TEST(BpeTrain, CompressesItsTrainingText) {
  const std::string text = "the quick brown fox jumps over the lazy dog. ";
  std::string doc;
  for (int i = 0; i < 200; ++i) doc += text;
  BpeTrainOptions opt;
  opt.vocab_size = 300;
  auto tok = train_bpe({doc}, opt);
  std::vector<uint32_t> ids;
  tok->encode(text, ids);
  EXPECT_LE(ids.size(), 12u);
}

TEST(BpeTrain, RejectsBadOptions) {
  BpeTrainOptions opt;
  opt.vocab_size = 100;
  EXPECT_NE(error_of([&] { train_bpe({"abc"}, opt); }).find("--vocab-size 100"), std::string::npos);
  opt.vocab_size = 300;
  opt.pattern = "([a-z";
  EXPECT_NE(error_of([&] { train_bpe({"abc"}, opt); }).find("--pattern"), std::string::npos);
}

TEST(BpeTokenizer, ExactRoundTripForAnyBytes) {
  auto tok = small_tokenizer();
  Rng rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string s;
    const int n = int(rng.below(300));
    for (int k = 0; k < n; ++k) s += char(rng.below(256));
    std::vector<uint32_t> ids;
    tok->encode(s, ids);
    ASSERT_EQ(tok->decode(ids), s) << "random bytes " << i;
  }
  for (const auto& s : testing::varied_texts(11, 200, true)) {
    std::vector<uint32_t> ids;
    tok->encode(s, ids);
    ASSERT_EQ(tok->decode(ids), s);
  }
  // A long piece (heap merge path) gives the same ids as the same bytes split by the short path
  // would, i.e. is a valid tokenization that round-trips.
  std::string longword(20000, 'x');
  std::vector<uint32_t> ids;
  tok->encode(longword, ids);
  EXPECT_EQ(tok->decode(ids), longword);
}

TEST(BpeTokenizer, SaveLoadRoundTrip) {
  auto tok = small_tokenizer();
  const std::string path = tmp_dir() + "/rt.tiktoken";
  tok->save(path);
  auto back = load_tokenizer(path);
  EXPECT_EQ(back->kind(), "bpe");
  EXPECT_EQ(back->identity(), tok->identity());
  EXPECT_EQ(back->vocab_size(), tok->vocab_size());
  EXPECT_EQ(back->bos_id(), tok->bos_id());
  // The sidecar path loads the same tokenizer; so does save_to_dir.
  EXPECT_EQ(load_tokenizer(path + ".json")->identity(), tok->identity());
  const std::string dir = tmp_dir() + "/dir";
  make_dirs(dir);
  const std::string spec = tok->save_to_dir(dir);
  EXPECT_EQ(load_tokenizer_in_dir(dir, spec)->identity(), tok->identity());
  for (const auto& s : testing::varied_texts(5, 50, true)) {
    std::vector<uint32_t> a, b;
    tok->encode(s, a);
    back->encode(s, b);
    EXPECT_EQ(a, b);
  }
}

TEST(BpeTokenizer, BrokenFilesGiveOneLineErrors) {
  auto tok = small_tokenizer();
  const std::string path = tmp_dir() + "/broken.tiktoken";
  tok->save(path);
  const std::string good = read_file(path);
  auto first_line_end = good.find('\n');
  // Line 3 broken: a missing rank.
  {
    std::string bad = good;
    size_t p = first_line_end + 1;
    p = bad.find('\n', p) + 1;
    const size_t e = bad.find('\n', p);
    bad.replace(p, e - p, "QUJD");
    write_file_atomic(path, bad);
    const std::string err = error_of([&] { load_tokenizer(path); });
    EXPECT_NE(err.find(path + ":3: malformed line"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos);
  }
  // Invalid base64.
  {
    std::string bad = "!!!! 0\n" + good.substr(first_line_end + 1);
    write_file_atomic(path, bad);
    const std::string err = error_of([&] { load_tokenizer(path); });
    EXPECT_NE(err.find(path + ":1: malformed line (invalid base64"), std::string::npos) << err;
  }
  // A duplicated rank.
  {
    write_file_atomic(path, good + good.substr(0, first_line_end + 1));
    const std::string err = error_of([&] { load_tokenizer(path); });
    EXPECT_NE(err.find("appears twice"), std::string::npos) << err;
  }
  // Content changed under an intact sidecar.
  {
    std::string bad = good;
    bad.replace(0, first_line_end, "AQ== 0");  // rank 0 is now byte 0x01 (also rank 1)
    write_file_atomic(path, bad);
    const std::string err = error_of([&] { load_tokenizer(path); });
    EXPECT_NE(err.find(path), std::string::npos) << err;
  }
  // Missing sidecar.
  {
    write_file_atomic(path, good);
    fs::remove(path + ".json");
    const std::string err = error_of([&] { load_tokenizer(path); });
    EXPECT_NE(err.find(path + ".json: missing"), std::string::npos) << err;
  }
  EXPECT_NE(error_of([&] { load_tokenizer("no/such/file.tiktoken"); }).find("no/such/file.tiktoken"), std::string::npos);
}

TEST(BpeTokenizer, DecodeRejectsUnknownIds) {
  auto tok = small_tokenizer();
  EXPECT_NE(error_of([&] { tok->decode(std::vector<uint32_t>{tok->vocab_size() + 5}); }).find("not in the vocabulary"),
            std::string::npos);
}

}  // namespace
}  // namespace nt
