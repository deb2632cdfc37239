// SPDX-License-Identifier: MIT
// File helpers: whole-file reads, read-only memory maps, and atomic writes
// (write to NAME.tmp, fsync, rename over NAME, fsync the directory) so that a crash never
// leaves a half-written file where a good one stood.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace nt {

// Throws nt::Error naming the path on failure.
std::string read_file(const std::string& path);

// Writes through `writer` (called with a FILE*-like sink) to path.tmp, then renames.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file if commit() was not reached
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  // Overwrites bytes already written (e.g. a checksum patched into a header).
  void write_at(size_t offset, const void* data, size_t n);
  // Flush, fsync, rename over the final path, fsync the directory.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

inline void write_file_atomic(const std::string& path, std::string_view content) {
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

// A read-only memory map of a whole file.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Creates a directory (and parents); throws if it cannot, or if it exists but is not writable.
void make_dirs(const std::string& path);

}  // namespace nt
