// SPDX-License-Identifier: MIT
#include "core/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/check.h"

namespace nt {

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("%s: not a regular file", path.c_str());
  }
  std::string s(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = ::read(fd, s.data() + got, s.size() - got);
    if (n <= 0) {
      ::close(fd);
      fail("%s: read error", path.c_str());
    }
    got += size_t(n);
  }
  ::close(fd);
  return s;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("%s: cannot write: %s", tmp_.c_str(), std::strerror(errno));
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
}

void AtomicFile::write_at(size_t offset, const void* data, size_t n) {
  if (::pwrite(fd_, data, n, off_t(offset)) != ssize_t(n))
    fail("%s: write failed: %s", tmp_.c_str(), std::strerror(errno));
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("%s: fsync failed: %s", tmp_.c_str(), std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("%s: close failed: %s", tmp_.c_str(), std::strerror(errno));
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("%s: rename failed: %s", path_.c_str(), std::strerror(errno));
  committed_ = true;
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("%s: not a regular file", path.c_str());
  }
  size_ = size_t(st.st_size);
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

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) fail("%s: cannot create directory: %s", path.c_str(), ec.message().c_str());
  if (::access(path.c_str(), W_OK) != 0) fail("%s: directory is not writable", path.c_str());
}


}  // namespace nt
