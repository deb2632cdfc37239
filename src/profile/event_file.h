// SPDX-License-Identifier: MIT
// TensorBoard event files, written without TensorFlow: a TFRecord file (each record a length, the
// data and CRC-32Cs of both) of protobuf `Event` messages encoded by hand. Only scalars are
// written: the first record names the file version, every other one carries a step, a wall time
// and any number of (tag, value) pairs. The record layout is in docs/FORMATS.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nt::profile {

inline constexpr const char* kEventFileVersion = "brain.Event:2";

// One Event message, as far as this project writes it.
struct ScalarEvent {
  double wall_time = 0;  // seconds since the Unix epoch
  int64_t step = 0;
  std::string file_version;                           // set in a file's first record only
  std::vector<std::pair<std::string, float>> values;  // Summary.value: tag, simple_value
};

// Seconds since the Unix epoch, as an event's wall_time.
double wall_time_now();

// The protobuf bytes of an Event.
std::string encode_event(const ScalarEvent& e);
// A TFRecord around data: uint64 length, masked CRC-32C of the length, data, masked CRC-32C of data.
std::string frame_record(std::string_view data);

// The records of a TFRecord file's contents, in order, up to the first that is cut short or
// fails a CRC (a writer killed mid-record leaves such a tail); `end` of each is the offset just
// after it, so contents.substr(0, end) keeps it and everything before it.
struct Record {
  std::string_view data;
  size_t end = 0;
};
std::vector<Record> read_records(std::string_view contents, bool* clean_end = nullptr);
// Decodes an Event's bytes; fields other than the ones above are skipped. Throws nt::Error
// (naming `what`) on bytes that are not a protobuf message.
ScalarEvent decode_event(std::string_view data, const std::string& what);

// Appends events to a new event file, one whole record per write (a crash loses at most the
// record being written). The file is created exclusively and opens with the version record.
class EventFileWriter {
 public:
  explicit EventFileWriter(std::string path);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;
  void write(const ScalarEvent& e);
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& record);
  std::string path_;
  int fd_ = -1;
};

}  // namespace nt::profile
