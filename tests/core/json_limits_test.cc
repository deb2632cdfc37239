// SPDX-License-Identifier: MIT
// JSON inputs are bounded in size and nesting; syntax errors still reach the caller's message.
#include <gtest/gtest.h>

#include "core/files.h"
#include "core/json_limits.h"
#include "test_util.h"

namespace nt {
namespace {

std::string nested(int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); }

TEST(JsonLimits, DepthIsBounded) {
  EXPECT_NO_THROW(parse_json(nested(kJsonMaxDepth), "x"));
  const std::string err = test::error_of([] { parse_json(nested(kJsonMaxDepth + 1), "in.json"); });
  EXPECT_EQ(err, "in.json: JSON nested more than 64 levels deep");
  // Objects count too, and a deep document of a million levels is refused, not parsed.
  std::string objects;
  for (int i = 0; i < 100; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100, '}');
  EXPECT_NE(test::error_of([&] { parse_json(objects, "o"); }).find("nested more than"), std::string::npos);
  EXPECT_NE(test::error_of([] { parse_json(nested(1000000), "deep"); }).find("nested more than"), std::string::npos);
}

TEST(JsonLimits, SizeIsBoundedBeforeReading) {
  const std::string dir = test::tmp_dir("json_limits");
  const std::string path = dir + "/big.json";
  write_file_atomic(path, "[" + std::string(kJsonMaxBytes, ' ') + "]");
  const std::string err = test::error_of([&] { read_json_file(path); });
  EXPECT_NE(err.find(path + ": " + std::to_string(kJsonMaxBytes + 2) + " bytes, more than the"), std::string::npos) << err;
  EXPECT_NE(test::error_of([] { parse_json("[1, 2, 3]", "small", 4); }).find("small: 9 bytes of JSON, more than the 4"),
            std::string::npos);
  write_file_atomic(path, R"({"a": [1, 2, {"b": null}]})");
  EXPECT_EQ(read_json_file(path)["a"][2].contains("b"), true);
}

TEST(JsonLimits, SyntaxErrorsStayJsonExceptions) {
  EXPECT_THROW(parse_json("{\"a\": ", "x"), nlohmann::json::exception);
  EXPECT_THROW(parse_json("", "x"), nlohmann::json::exception);
}

}  // namespace
}  // namespace nt
