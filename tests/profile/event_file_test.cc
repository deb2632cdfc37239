// SPDX-License-Identifier: MIT
// TensorBoard event files: an Event's bytes against protobuf's encoding worked out by hand,
// TFRecord framing against its definition, encode/decode round trips, and records cut short or
// corrupted (read up to the last good one).
#include "profile/event_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/check.h"
#include "core/crc32c.h"
#include "core/files.h"
#include "test_util.h"

namespace nt::profile {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s += char(uint8_t(x));
  return s;
}

TEST(EventFile, EncodesAnEventAsProtobufDoes) {
  ScalarEvent e;
  e.wall_time = 1.0;
  e.step = 300;
  e.values = {{"a", 1.0f}};
  // wall_time: field 1, fixed64 (0x09) 1.0; step: field 2, varint (0x10) 300 = AC 02; summary:
  // field 5, bytes (0x2A) of Summary{value (0x0A) of Value{tag (0x0A) "a", simple_value (0x15) 1.0f}}.
  const std::string want = bytes({0x09, 0,    0,    0,    0,    0,    0,   0xF0, 0x3F, 0x10, 0xAC, 0x02,
                                  0x2A, 0x0A, 0x0A, 0x08, 0x0A, 0x01, 'a', 0x15, 0,    0,    0x80, 0x3F});
  EXPECT_EQ(encode_event(e), want);
  ScalarEvent v;
  v.file_version = kEventFileVersion;
  EXPECT_EQ(encode_event(v), bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x1A, 13}) + "brain.Event:2");
}

TEST(EventFile, FramesARecord) {
  const std::string r = frame_record("hello");
  ASSERT_EQ(r.size(), 8u + 4 + 5 + 4);
  uint64_t n;
  uint32_t hcrc, dcrc;
  std::memcpy(&n, r.data(), 8);
  std::memcpy(&hcrc, r.data() + 8, 4);
  std::memcpy(&dcrc, r.data() + 17, 4);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(hcrc, crc32c_masked(crc32c(r.data(), 8)));
  EXPECT_EQ(r.substr(12, 5), "hello");
  EXPECT_EQ(dcrc, crc32c_masked(crc32c("hello", 5)));
}

TEST(EventFile, RoundTripsThroughAFile) {
  const std::string path = test::tmp_dir("event_file") + "/events.out.tfevents.1";
  std::vector<ScalarEvent> written;
  {
    EventFileWriter w(path);
    for (int64_t step = 0; step < 50; ++step) {
      ScalarEvent e;
      e.wall_time = 1.7e9 + 0.25 * double(step);
      e.step = step * 1000003;  // multi-byte varints
      for (int k = 0; k < int(step % 4); ++k) e.values.push_back({"tag/" + std::to_string(k), float(step) / 3.0f});
      w.write(e);
      written.push_back(e);
    }
    EXPECT_THROW(EventFileWriter again(path), Error);  // never over an existing file
  }
  const std::string contents = read_file(path);
  bool clean = false;
  const std::vector<Record> records = read_records(contents, &clean);
  EXPECT_TRUE(clean);
  ASSERT_EQ(records.size(), written.size() + 1);
  EXPECT_EQ(records.back().end, contents.size());
  EXPECT_EQ(decode_event(records[0].data, path).file_version, kEventFileVersion);
  for (size_t i = 0; i < written.size(); ++i) {
    const ScalarEvent got = decode_event(records[i + 1].data, path);
    EXPECT_EQ(got.wall_time, written[i].wall_time);
    EXPECT_EQ(got.step, written[i].step);
    EXPECT_EQ(got.values, written[i].values);
    EXPECT_TRUE(got.file_version.empty());
  }
}

TEST(EventFile, ReadsUpToADamagedRecord) {
  std::string good;
  for (int i = 0; i < 3; ++i)
    good += frame_record(encode_event({.wall_time = 1, .step = i + 1, .file_version = "", .values = {}}));
  for (size_t cut = 1; cut < 20; ++cut) {
    bool clean = true;
    const std::string s = good.substr(0, good.size() - cut);
    EXPECT_EQ(read_records(s, &clean).size(), 2u) << cut;
    EXPECT_FALSE(clean);
  }
  const size_t one = good.size() / 3;
  for (size_t at : {size_t(0), size_t(9), size_t(14), one - 1}) {  // length, its CRC, data, data CRC
    std::string bad = good;
    bad[one + at] ^= 0x10;
    EXPECT_EQ(read_records(bad).size(), 1u) << at;
  }
  EXPECT_THROW(decode_event(bytes({0x2A, 0x05, 0x0A}), "x"), Error);  // a field past the end
  EXPECT_THROW(decode_event(bytes({0x0B}), "x"), Error);              // a group
}

}  // namespace
}  // namespace nt::profile
