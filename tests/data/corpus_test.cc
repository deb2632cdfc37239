// SPDX-License-Identifier: MIT
// The default corpus: fetched with npm (the archives are cached in data/cache of the source tree,
// so only the first run downloads), checked against the pinned hashes, idempotent.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/sha256.h"
#include "data/corpus.h"
#include "test_util.h"

namespace nt {
namespace {

namespace fs = std::filesystem;

TEST(DefaultCorpus, PinnedIdempotentAndCoversEverySource) {
  const fs::path out = test::tmp_dir("corpus");
  FetchOptions o;
  o.out = out.string();
  o.cache = std::string(NT_SOURCE_DIR) + "/data/cache";
  o.quiet = true;
  const FetchResult a = fetch_default_corpus(o);
  EXPECT_FALSE(a.up_to_date);
  EXPECT_EQ(a.train_sha256, kDefaultCorpusTrainSha256);
  EXPECT_EQ(a.val_sha256, kDefaultCorpusValSha256);
  EXPECT_EQ(to_hex(sha256_file((out / "train.jsonl").string())), kDefaultCorpusTrainSha256);
  EXPECT_EQ(to_hex(sha256_file((out / "val.jsonl").string())), kDefaultCorpusValSha256);
  const auto before = fs::last_write_time(out / "train.jsonl");

  const FetchResult b = fetch_default_corpus(o);
  EXPECT_TRUE(b.up_to_date);
  EXPECT_FALSE(b.downloaded);
  EXPECT_EQ(fs::last_write_time(out / "train.jsonl"), before);
  EXPECT_EQ(b.train_sha256, a.train_sha256);

  const auto m = nlohmann::json::parse(read_file((out / "manifest.json").string()));
  ASSERT_EQ(m.at("sources").size(), 2u);
  for (const auto& s : m.at("sources")) {
    EXPECT_GT(s.at("val_docs").get<int>(), 0) << s.dump();
    const double frac = s.at("val_bytes").get<double>() / s.at("bytes").get<double>();
    EXPECT_GE(frac, 0.02);
    EXPECT_LT(frac, 0.06);
    EXPECT_EQ(s.at("sha256").get<std::string>().size(), 64u);
    EXPECT_EQ(s.at("integrity").get<std::string>().rfind("sha512-", 0), 0u);
  }
  EXPECT_GT(a.train_bytes, 20'000'000u);

  // A damaged output is rebuilt from the cache (no download) to the pinned bytes.
  write_file_atomic((out / "val.jsonl").string(), "{\"text\": \"x\"}\n");
  const FetchResult c = fetch_default_corpus(o);
  EXPECT_FALSE(c.up_to_date);
  EXPECT_FALSE(c.downloaded);
  EXPECT_EQ(to_hex(sha256_file((out / "val.jsonl").string())), kDefaultCorpusValSha256);
}

}  // namespace
}  // namespace nt
