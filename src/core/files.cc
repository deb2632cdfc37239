// SPDX-License-Identifier: MIT
#include "core/files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/check.h"

namespace nt {

namespace {
// Opens path for reading without blocking (a FIFO with no writer would block a plain open) and
// refuses anything but a regular file before a byte is read. Returns the descriptor and its size.
int open_regular(const std::string& path, size_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("%s: not a regular file", path.c_str());
  }
  *size = size_t(st.st_size);
  return fd;
}

// The mode a new file gets from 0666 and this process's umask (read without changing it).
mode_t new_file_mode() {
  unsigned mask = 022;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[128];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
    std::fclose(f);
  }
  return mode_t(0666 & ~mask);
}

// The test hook described in files.h: stops this process once, at the stage and file that
// NANOTRAIN_TEST_PAUSE_AT names.
void pause_for_test(const char* stage, const std::string& path) {
  static const std::string spec = [] {
    const char* e = std::getenv("NANOTRAIN_TEST_PAUSE_AT");
    return std::string(e ? e : "");
  }();
  static bool fired = false;
  if (spec.empty() || fired) return;
  const size_t colon = spec.find(':');
  const std::string want_stage = spec.substr(0, colon);
  const std::string suffix = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (want_stage != stage || path.size() < suffix.size() ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return;
  fired = true;
  std::fprintf(stderr, "nanotrain: test pause at %s of %s\n", stage, path.c_str());
  std::fflush(stderr);
  ::raise(SIGSTOP);
}
}  // namespace

std::string read_file(const std::string& path) {
  size_t size = 0;
  const int fd = open_regular(path, &size);
  std::string s(size, '\0');
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = ::read(fd, s.data() + got, s.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("%s: read error", path.c_str());
    }
    got += size_t(n);
  }
  ::close(fd);
  return s;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  refuse_non_regular(path_);
  // A fresh name beside the destination, created exclusively (never an existing file or a link
  // planted there), so that two writers or another user cannot share or redirect it.
  std::string name = path_ + ".XXXXXX.tmp";
  fd_ = ::mkostemps(name.data(), 4, O_CLOEXEC);
  if (fd_ < 0) fail("%s: cannot write: %s", path_.c_str(), std::strerror(errno));
  tmp_ = name;
  ::fchmod(fd_, new_file_mode());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("%s: write failed: %s", tmp_.c_str(), std::strerror(errno));
    }
    p += w;
    n -= size_t(w);
  }
  pause_for_test("mid-write", path_);
}

void AtomicFile::write_at(size_t offset, const void* data, size_t n) {
  if (::pwrite(fd_, data, n, off_t(offset)) != ssize_t(n))
    fail("%s: write failed: %s", tmp_.c_str(), std::strerror(errno));
}

void AtomicFile::commit() {
  pause_for_test("after-write", path_);
  if (::fsync(fd_) != 0) fail("%s: fsync failed: %s", tmp_.c_str(), std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("%s: close failed: %s", tmp_.c_str(), std::strerror(errno));
  }
  fd_ = -1;
  pause_for_test("after-fsync", path_);
  refuse_non_regular(path_);  // (checked again: the destination may have changed meanwhile)
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("%s: rename failed: %s", path_.c_str(), std::strerror(errno));
  committed_ = true;
  pause_for_test("after-rename", path_);
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = open_regular(path, &size_);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail("%s: mmap failed: %s", path.c_str(), std::strerror(errno));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void refuse_non_regular(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // nothing there yet
  if (S_ISLNK(st.st_mode)) fail("%s: is a symbolic link; refusing to replace it", path.c_str());
  if (S_ISDIR(st.st_mode)) fail("%s: is a directory; refusing to replace it", path.c_str());
  if (!S_ISREG(st.st_mode)) fail("%s: is not a regular file (a device, FIFO or socket); refusing to replace it", path.c_str());
}

TempFile::TempFile(const std::string& dir, const std::string& prefix) {
  std::string name = (std::filesystem::path(dir) / (prefix + "XXXXXX")).string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) fail("%s: cannot create a temporary file: %s", dir.c_str(), std::strerror(errno));
  ::close(fd);
  path_ = name;
}

TempFile::~TempFile() { ::unlink(path_.c_str()); }

std::string temp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) fail("%s: cannot create directory: %s", path.c_str(), ec.message().c_str());
  if (::access(path.c_str(), W_OK) != 0) fail("%s: directory is not writable", path.c_str());
}


namespace {

// What the holder of a lock file wrote in it (its pid, or "PID on HOST"), without the line end.
std::string holder_note(int fd) {
  char buf[256] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string who = n > 0 ? std::string(buf, size_t(n)) : "";
  while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
  return who;
}

int open_lock_file(const std::string& path) {
  refuse_non_regular(path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("%s: cannot open the lock file: %s", path.c_str(), std::strerror(errno));
  return fd;
}

// Replaces the lock file's content with `note` (what the next process that fails to lock is told).
void write_note(int fd, const std::string& path, const std::string& note) {
  const std::string line = note + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != ssize_t(line.size()))
    fail("%s: cannot write the lock file: %s", path.c_str(), std::strerror(errno));
}

}  // namespace

int lock_folder(const std::string& dir, const char* name, const char* what, bool* created) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  // A holder may remove its lock file when done (unlock_folder): a lock taken on a file that is no
  // longer the one at the path does not count, and is taken again on the new one.
  for (int attempt = 0;; ++attempt) {
    refuse_non_regular(path);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    *created = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && attempt < 100) continue;  // removed between the two opens
    if (fd < 0) fail("%s: cannot create the %s's lock: %s", path.c_str(), what, std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const std::string who = holder_note(fd);
      ::close(fd);
      fail("%s: in use by another nanotrain process%s; wait for it to finish or stop it", dir.c_str(),
           who.empty() ? "" : (" (pid " + who + ")").c_str());
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) != 0 || ::lstat(path.c_str(), &now) != 0 || held.st_ino != now.st_ino ||
        held.st_dev != now.st_dev) {
      ::close(fd);
      if (attempt < 100) continue;
      fail("%s: cannot take the %s's lock (its lock file keeps changing)", path.c_str(), what);
    }
    write_note(fd, path, std::to_string(::getpid()));
    return fd;
  }
}

int try_lock_file(const std::string& dir, const char* name, const std::string& note, std::string* holder,
                  bool shared) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  const int fd = open_lock_file(path);
  if (::flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    *holder = holder_note(fd);
    ::close(fd);
    return -1;
  }
  if (!shared) write_note(fd, path, note);
  return fd;
}

int wait_lock_file(const std::string& dir, const char* name) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  const int fd = open_lock_file(path);
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) fail("%s: cannot take the lock: %s", path.c_str(), std::strerror(errno));
  return fd;
}

void unlock_folder(const std::string& dir, const char* name, int fd) {
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path(dir) / name, ec);  // while still held
  ::close(fd);
}

}  // namespace nt
