// SPDX-License-Identifier: MIT
#include "profile/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/check.h"
#include "core/crc32c.h"

namespace nt::profile {

namespace {

// Protobuf wire types.
constexpr int kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) out += char(uint8_t(v) | 0x80), v >>= 7;
  out += char(uint8_t(v));
}

void put_tag(std::string& out, int field, int wire) { put_varint(out, uint64_t(field) << 3 | uint64_t(wire)); }

template <class T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian, as protobuf's fixed fields are (x86, ARM)
  out.append(b, sizeof(T));
}

void put_bytes(std::string& out, int field, std::string_view s) {
  put_tag(out, field, kBytes);
  put_varint(out, s.size());
  out.append(s);
}

// A cursor over protobuf bytes; every read checks the bounds.
struct Reader {
  std::string_view s;
  const std::string& what;
  size_t pos = 0;

  bool done() const { return pos >= s.size(); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= s.size()) fail("%s: a varint runs past the end of its message", what.c_str());
      const uint8_t b = uint8_t(s[pos++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("%s: a varint longer than 10 bytes", what.c_str());
  }
  std::string_view take(size_t n) {
    if (n > s.size() - pos) fail("%s: a field runs past the end of its message", what.c_str());
    const std::string_view out = s.substr(pos, n);
    pos += n;
    return out;
  }
  template <class T>
  T fixed() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }
  // Skips a field of the given wire type; groups (3, 4) are refused.
  void skip(int wire) {
    if (wire == kVarint)
      varint();
    else if (wire == kFixed64)
      take(8);
    else if (wire == kBytes)
      take(varint());
    else if (wire == kFixed32)
      take(4);
    else
      fail("%s: unsupported protobuf wire type %d", what.c_str(), wire);
  }
};

std::pair<std::string, float> decode_value(std::string_view data, const std::string& what) {
  Reader r{data, what};
  std::pair<std::string, float> out{"", 0.0f};
  while (!r.done()) {
    const uint64_t key = r.varint();
    const int field = int(key >> 3), wire = int(key & 7);
    if (field == 1 && wire == kBytes)
      out.first = std::string(r.take(r.varint()));
    else if (field == 2 && wire == kFixed32)
      out.second = r.fixed<float>();
    else
      r.skip(wire);
  }
  return out;
}

uint64_t read_u64(std::string_view s, size_t at) {
  uint64_t v;
  std::memcpy(&v, s.data() + at, 8);
  return v;
}

uint32_t read_u32(std::string_view s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

}  // namespace

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string encode_event(const ScalarEvent& e) {
  std::string out;
  put_tag(out, 1, kFixed64);
  put_fixed<double>(out, e.wall_time);
  if (e.step != 0) put_tag(out, 2, kVarint), put_varint(out, uint64_t(e.step));
  if (!e.file_version.empty()) put_bytes(out, 3, e.file_version);
  if (!e.values.empty()) {
    std::string summary;
    for (const auto& [tag, v] : e.values) {
      std::string value;
      put_bytes(value, 1, tag);
      put_tag(value, 2, kFixed32);
      put_fixed<float>(value, v);
      put_bytes(summary, 1, value);
    }
    put_bytes(out, 5, summary);
  }
  return out;
}

std::string frame_record(std::string_view data) {
  std::string out;
  const uint64_t n = data.size();
  put_fixed<uint64_t>(out, n);
  put_fixed<uint32_t>(out, crc32c_masked(crc32c(out.data(), 8)));
  out.append(data);
  put_fixed<uint32_t>(out, crc32c_masked(crc32c(data.data(), data.size())));
  return out;
}

std::vector<Record> read_records(std::string_view contents, bool* clean_end) {
  std::vector<Record> out;
  size_t pos = 0;
  for (;;) {
    if (contents.size() - pos < 12) break;
    const uint64_t n = read_u64(contents, pos);
    if (read_u32(contents, pos + 8) != crc32c_masked(crc32c(contents.data() + pos, 8))) break;
    if (n > contents.size() - pos - 12 || contents.size() - pos - 12 - n < 4) break;
    const std::string_view data = contents.substr(pos + 12, n);
    if (read_u32(contents, pos + 12 + n) != crc32c_masked(crc32c(data.data(), data.size()))) break;
    pos += 16 + n;
    out.push_back({data, pos});
  }
  if (clean_end) *clean_end = pos == contents.size();
  return out;
}

ScalarEvent decode_event(std::string_view data, const std::string& what) {
  Reader r{data, what};
  ScalarEvent e;
  while (!r.done()) {
    const uint64_t key = r.varint();
    const int field = int(key >> 3), wire = int(key & 7);
    if (field == 1 && wire == kFixed64) {
      e.wall_time = r.fixed<double>();
    } else if (field == 2 && wire == kVarint) {
      e.step = int64_t(r.varint());
    } else if (field == 3 && wire == kBytes) {
      e.file_version = std::string(r.take(r.varint()));
    } else if (field == 5 && wire == kBytes) {
      Reader summary{r.take(r.varint()), what};
      while (!summary.done()) {
        const uint64_t k = summary.varint();
        if (k == (1 << 3 | kBytes))
          e.values.push_back(decode_value(summary.take(summary.varint()), what));
        else
          summary.skip(int(k & 7));
      }
    } else {
      r.skip(wire);
    }
  }
  return e;
}

EventFileWriter::EventFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("%s: cannot create: %s", path_.c_str(), std::strerror(errno));
  ScalarEvent first;
  first.wall_time = wall_time_now();
  first.file_version = kEventFileVersion;
  write(first);
}

EventFileWriter::~EventFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::write(const ScalarEvent& e) { append(frame_record(encode_event(e))); }

void EventFileWriter::append(const std::string& record) {
  for (size_t done = 0; done < record.size();) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("%s: write failed: %s", path_.c_str(), std::strerror(errno));
    done += size_t(n);
  }
}

}  // namespace nt::profile
