// SPDX-License-Identifier: MIT
// Shard files: round trip, and one-line errors naming the file for corrupted, truncated and
// other-tokenizer shards (library level and through the CLI).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "core/check.h"
#include "core/files.h"
#include "data/dataset.h"
#include "data/prepare.h"
#include "data/shard_format.h"
#include "test_util.h"
#include "tokenizer/bpe_train.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

std::string tmp_dir(const std::string& name) { return test::tmp_dir("shard/" + name); }
using test::error_of;

std::string write_test_shard(const std::string& path, uint32_t vocab, const Digest& id) {
  ShardWriter w(path, vocab, vocab - 1, id);
  std::vector<uint32_t> doc;
  for (uint32_t i = 0; i < 1000; ++i) doc.push_back(i % (vocab - 1));
  w.add_document(doc);
  w.add_document(std::vector<uint32_t>{1, 2, 3});
  w.finish();
  return path;
}

TEST(Shard, RoundTripBothWidths) {
  const std::string dir = tmp_dir("rt");
  const Digest id = sha256(std::string_view("tok"));
  for (uint32_t vocab : {300u, 70000u}) {
    const std::string p = write_test_shard(dir + "/s" + std::to_string(vocab) + ".bin", vocab, id);
    const ShardExpect e{id, vocab, vocab - 1};
    Shard s(p, &e);
    EXPECT_EQ(s.header().token_width, vocab <= 65536 ? 2u : 4u);
    EXPECT_EQ(s.size(), 1005u);
    EXPECT_EQ(s.header().doc_count, 2u);
    EXPECT_EQ(s.token(0), vocab - 1);
    EXPECT_EQ(s.token(1), 0u);
    EXPECT_EQ(s.token(1001), vocab - 1);
    EXPECT_EQ(s.token(1004), 3u);
  }
}

TEST(Shard, CorruptTruncatedAndForeignShardsAreOneLineErrors) {
  const std::string dir = tmp_dir("bad");
  const Digest id = sha256(std::string_view("tok")), other = sha256(std::string_view("other"));
  const std::string p = write_test_shard(dir + "/a.bin", 300, id);
  const std::string good = read_file(p);

  std::string bad = good;
  bad[200] ^= 1;
  write_file_atomic(p, bad);
  std::string err = error_of([&] { Shard s(p, nullptr); });
  EXPECT_NE(err.find(p + ": corrupt shard (checksum mismatch)"), std::string::npos) << err;

  write_file_atomic(p, good.substr(0, good.size() - 7));
  err = error_of([&] { Shard s(p, nullptr); });
  EXPECT_NE(err.find(p + ": truncated or corrupt shard"), std::string::npos) << err;

  write_file_atomic(p, good.substr(0, 50));
  err = error_of([&] { Shard s(p, nullptr); });
  EXPECT_NE(err.find(p + ": not a token shard"), std::string::npos) << err;

  write_file_atomic(p, good);
  const ShardExpect foreign{other, 300, 299};
  err = error_of([&] { Shard s(p, &foreign); });
  EXPECT_NE(err.find(p + ": shard was made with another tokenizer"), std::string::npos) << err;
  EXPECT_NE(err.find(p + ": shard was made with another tokenizer"), std::string::npos) << err;
  for (const auto& e : {err}) EXPECT_EQ(e.find('\n'), std::string::npos);
}

// A shard whose checksum is right but whose header or tokens were forged: the checksum is
// recomputed over the forged bytes, as an attacker (or a buggy writer) would.
std::string reseal(std::string bytes) {
  Sha256 h;
  h.update(bytes.data(), 80);
  h.update(bytes.data() + kShardHeaderBytes, bytes.size() - kShardHeaderBytes);
  const Digest d = h.finish();
  std::memcpy(bytes.data() + 80, d.data(), 32);
  return bytes;
}

TEST(Shard, HeaderFieldsAreCoveredByTheChecksum) {
  const std::string dir = tmp_dir("header");
  const Digest id = sha256(std::string_view("tok"));
  const std::string p = write_test_shard(dir + "/a.bin", 300, id);
  const std::string good = read_file(p);
  for (size_t off : {20u, 24u, 40u, 48u, 79u}) {  // vocab, BOS, doc count, tokenizer id
    std::string bad = good;
    bad[off] ^= 1;
    write_file_atomic(p, bad);
    const std::string err = error_of([&] { Shard s(p, nullptr); });
    EXPECT_NE(err.find(p + ": corrupt shard (checksum mismatch)"), std::string::npos) << off << ": " << err;
  }
}

TEST(Shard, TokenIdsOutsideTheVocabularyAreRefusedWithTheirOffset) {
  const std::string dir = tmp_dir("oov");
  const Digest id = sha256(std::string_view("tok"));
  for (uint32_t vocab : {300u, 70000u}) {
    const std::string p = write_test_shard(dir + "/v" + std::to_string(vocab) + ".bin", vocab, id);
    std::string bytes = read_file(p);
    const size_t width = vocab <= 65536 ? 2 : 4, at = 517;  // token 517 of 1005
    const uint32_t forged = vocab;  // the first id outside
    std::memcpy(&bytes[kShardHeaderBytes + at * width], &forged, width);
    write_file_atomic(p, reseal(bytes));
    const std::string err = error_of([&] { Shard s(p, nullptr); });
    const std::string want = p + ": token 517 (byte offset " + std::to_string(kShardHeaderBytes + at * width) +
                             ") is id " + std::to_string(vocab) + ", outside the vocabulary of " + std::to_string(vocab);
    EXPECT_NE(err.find(want), std::string::npos) << err;
  }
}

TEST(Shard, AnotherTokenizersVocabularyOrBosIsRefused) {
  const std::string dir = tmp_dir("expect");
  const Digest id = sha256(std::string_view("tok"));
  const std::string p = write_test_shard(dir + "/a.bin", 300, id);
  EXPECT_NO_THROW(({ const ShardExpect ok{id, 300, 299}; Shard s(p, &ok); }));
  const ShardExpect vocab{id, 301, 299}, bos{id, 300, 0};
  EXPECT_NE(error_of([&] { Shard s(p, &vocab); }).find(p + ": shard has vocabulary 300 and BOS 299, its tokenizer 301"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Shard s(p, &bos); }).find("its tokenizer 300 and 0"), std::string::npos);
}

// The same failures through `nanotrain` (exit status and a single stderr line naming the file).
std::string cli() {
  if (const char* e = std::getenv("NT_CLI")) return e;
  return std::string(NT_BINARY_DIR) + "/nanotrain";
}

int run_cli(const std::string& args, std::string* err_out) {
  const std::string err_file = std::string(NT_BINARY_DIR) + "/test_tmp/shard/cli_stderr.txt";
  const std::string cmd = "'" + cli() + "' " + args + " > /dev/null 2> '" + err_file + "'";
  const int rc = std::system(cmd.c_str());
  *err_out = read_file(err_file);
  return rc;
}

TEST(ShardCli, ErrorsNameTheFileAndExitNonZero) {
  ASSERT_TRUE(fs::exists(cli())) << cli() << " not built";
  const std::string dir = tmp_dir("cli");
  // A small BPE tokenizer and prepared data.
  std::vector<std::string> texts;
  for (int i = 0; i < 40; ++i) texts.push_back("Document " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog.\n");
  fs::create_directories(dir + "/text");
  for (size_t i = 0; i < texts.size(); ++i) write_file_atomic(dir + "/text/doc" + std::to_string(i) + ".txt", texts[i]);
  BpeTrainOptions topt;
  topt.vocab_size = 300;
  auto tok = train_bpe(texts, topt);
  tok->save(dir + "/tok.tiktoken");
  std::string err;
  ASSERT_EQ(run_cli("data prepare --quiet --input '" + dir + "/text' --tokenizer '" + dir + "/tok.tiktoken' --out '" + dir + "/prep'", &err), 0) << err;
  // Corrupt the shard: `tokenizer`-independent check through dataset opening is the trainer's
  // path; the CLI path checked here is the tokenizer file with a broken line.
  std::string t = read_file(dir + "/tok.tiktoken");
  t.insert(t.find('\n', t.find('\n') + 1) + 1, "not-a-line\n");
  write_file_atomic(dir + "/broken.tiktoken", t);
  fs::copy_file(dir + "/tok.tiktoken.json", dir + "/broken.tiktoken.json");
  EXPECT_NE(run_cli("tokenizer encode --tokenizer '" + dir + "/broken.tiktoken' --text hi", &err), 0);
  EXPECT_NE(err.find(dir + "/broken.tiktoken:3: malformed line"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

  // Dataset-level checks on the prepared folder.
  EXPECT_NO_THROW(open_dataset(dir + "/prep"));
  const std::string shard = dir + "/prep/gen-1/train_00000.bin";
  const std::string good = read_file(shard);
  std::string bad = good;
  bad[bad.size() - 1] ^= 0x5a;
  write_file_atomic(shard, bad);
  err = error_of([&] { open_dataset(dir + "/prep"); });
  EXPECT_NE(err.find(shard + ": corrupt shard"), std::string::npos) << err;
  write_file_atomic(shard, good.substr(0, good.size() - 2));
  err = error_of([&] { open_dataset(dir + "/prep"); });
  EXPECT_NE(err.find(shard + ": truncated"), std::string::npos) << err;
  // A shard from another tokenizer (bytes) dropped into the folder.
  write_file_atomic(shard, good);
  ASSERT_EQ(run_cli("data prepare --quiet --input '" + dir + "/text' --tokenizer bytes --out '" + dir + "/prep_bytes'", &err), 0) << err;
  fs::copy_file(dir + "/prep_bytes/gen-1/val_00000.bin", dir + "/prep/gen-1/val_00000.bin",
                fs::copy_options::overwrite_existing);
  err = error_of([&] { open_dataset(dir + "/prep"); });
  EXPECT_NE(err.find(dir + "/prep/gen-1/val_00000.bin: shard was made with another tokenizer"), std::string::npos)
      << err;
}

}  // namespace
}  // namespace nt
