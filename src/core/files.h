// SPDX-License-Identifier: MIT
// File helpers: whole-file reads, read-only memory maps, and atomic writes
// (write to a fresh NAME.XXXXXX.tmp created exclusively, fsync, rename over NAME, fsync the
// directory) so that a crash never leaves a half-written file where a good one stood. Reads refuse
// anything but a regular file before reading (a FIFO never blocks them), and a replace refuses a
// destination that is not a regular file (a link, a folder, a device).
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace nt {

// Throws nt::Error naming the path on failure.
std::string read_file(const std::string& path);

// Writes to a temporary file beside path, then renames it over path.
//
// A test hook, inert unless NANOTRAIN_TEST_PAUSE_AT is set (read once): "STAGE:SUFFIX" stops the
// process (SIGSTOP, after a line on stderr) the first time a file whose name ends with SUFFIX
// reaches STAGE, so that a test can kill it exactly there. STAGE: mid-write (the temporary file
// holds its first write only), after-write (every byte written, not yet synced), after-fsync
// (synced and closed, not yet renamed), after-rename (in place, its folder not yet synced).
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

// Throws nt::Error if path exists and is not a regular file (lstat: a symbolic link counts as
// not regular), naming what it is.
void refuse_non_regular(const std::string& path);

// A file created exclusively (mkostemp) under dir with a random name, removed when destroyed.
class TempFile {
 public:
  TempFile(const std::string& dir, const std::string& prefix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};
// $TMPDIR, else /tmp.
std::string temp_dir();

// Takes the lock file dir/name (flock, without waiting) and writes this process's pid in it for
// the message another process gets; `what` names the folder's kind in messages ("run"). Returns
// the descriptor: the lock lasts while it is open, and the kernel drops it when the process dies,
// so a dead holder's lock is taken over. created: whether the lock file is new.
int lock_folder(const std::string& dir, const char* name, const char* what, bool* created);
// Takes the lock file dir/name without waiting and writes `note` in it (what another process is
// told), or returns -1 with *holder set to the note of the process holding it. The lock file is
// never removed, so it needs no re-check. shared: a shared lock (any number of shared holders,
// refused while an exclusive one is held; the note is not written).
int try_lock_file(const std::string& dir, const char* name, const std::string& note, std::string* holder,
                  bool shared = false);
// Takes the lock file dir/name, waiting for its holder: for short critical sections.
int wait_lock_file(const std::string& dir, const char* name);
// A lock descriptor held for a scope (-1: none); closing it releases the lock.
struct HeldLock {
  explicit HeldLock(int f) : fd(f) {}
  HeldLock(const HeldLock&) = delete;
  HeldLock& operator=(const HeldLock&) = delete;
  ~HeldLock() {
    if (fd >= 0) ::close(fd);
  }
  int fd;
};
// Removes the lock file (while still holding it) and releases the lock.
void unlock_folder(const std::string& dir, const char* name, int fd);

// Creates a directory (and parents); throws if it cannot, or if it exists but is not writable.
void make_dirs(const std::string& path);

}  // namespace nt
