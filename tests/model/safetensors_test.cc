// SPDX-License-Identifier: MIT
// The safetensors reader enforces the format's rules: every name once, and the tensors tile the
// data exactly (no shared bytes, no bytes that belong to no tensor).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace nt {
namespace {

// A file from a header text and a data size (the data is zeros).
std::vector<uint8_t> file_of(std::string header, size_t data_bytes) {
  while (header.size() % 8) header.push_back(' ');
  std::vector<uint8_t> f(8 + header.size() + data_bytes, 0);
  for (int i = 0; i < 8; ++i) f[size_t(i)] = uint8_t(uint64_t(header.size()) >> (8 * i));
  std::memcpy(f.data() + 8, header.data(), header.size());
  return f;
}

std::string parse_error(const std::string& header, size_t data_bytes) {
  const auto f = file_of(header, data_bytes);
  return test::error_of([&] { parse_safetensors(f.data(), f.size(), "t.safetensors"); });
}

TEST(Safetensors, AWellFormedFileParses) {
  EXPECT_EQ(parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                        12),
            "");
}

TEST(Safetensors, ANameTwiceIsAnError) {
  const std::string e = parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    8);
  EXPECT_NE(e.find("names a twice"), std::string::npos) << e;
}

TEST(Safetensors, SharedBytesAreAnError) {
  const std::string e = parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                    12);
  EXPECT_NE(e.find("share bytes"), std::string::npos) << e;
}

TEST(Safetensors, BytesOfNoTensorAreAnError) {
  // A hole between tensors, and bytes after the last one.
  std::string e = parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                              12);
  EXPECT_NE(e.find("belong to no tensor"), std::string::npos) << e;
  e = parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 16);
  EXPECT_NE(e.find("belong to no tensor"), std::string::npos) << e;
}

}  // namespace
}  // namespace nt
