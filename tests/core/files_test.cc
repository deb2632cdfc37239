// SPDX-License-Identifier: MIT
// Files the program reads and writes cannot be turned against the user: reads refuse anything
// but a regular file before reading (and never block on a FIFO), atomic replaces refuse a
// destination that is not a regular file and write through a fresh, exclusive temporary name.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/files.h"
#include "test_util.h"

namespace nt {
namespace {

namespace fs = std::filesystem;
using test::error_of;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Files, ReadsRefuseWhatIsNotARegularFileWithoutBlocking) {
  const fs::path d = test::tmp_dir("files/read");
  const fs::path fifo = d / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A FIFO with no writer: a blocking open would hang here forever.
  EXPECT_NE(error_of([&] { read_file(fifo.string()); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { MappedFile m(fifo.string()); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file("/dev/zero"); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file(d.string()); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { read_file((d / "missing").string()); }).find("cannot open"), std::string::npos);
  write_file_atomic((d / "ok").string(), "hello");
  EXPECT_EQ(read_file((d / "ok").string()), "hello");
}

TEST(Files, AtomicReplaceRefusesLinksFoldersAndDevices) {
  const fs::path d = test::tmp_dir("files/replace");
  write_file_atomic((d / "victim").string(), "precious");
  fs::create_symlink(d / "victim", d / "link");
  const std::string link_err = error_of([&] { write_file_atomic((d / "link").string(), "evil"); });
  EXPECT_NE(link_err.find("symbolic link"), std::string::npos) << link_err;
  EXPECT_EQ(slurp(d / "victim"), "precious");
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  fs::create_directory(d / "folder");
  EXPECT_NE(error_of([&] { write_file_atomic((d / "folder").string(), "x"); }).find("directory"), std::string::npos);
  ASSERT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { write_file_atomic((d / "fifo").string(), "x"); }).find("not a regular file"),
            std::string::npos);
  // Nothing half-written is left behind by the refusals.
  for (const auto& e : fs::directory_iterator(d)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
}

TEST(Files, TemporaryNamesAreFreshAndExclusive) {
  const fs::path d = test::tmp_dir("files/tmp");
  // A planted link at the old fixed temporary name is neither followed nor replaced.
  write_file_atomic((d / "victim").string(), "precious");
  fs::create_symlink(d / "victim", d / "out.tmp");
  {
    AtomicFile a((d / "out").string()), b((d / "out").string());  // two writers at once
    EXPECT_NE(a.path(), "");
    a.write("first");
    b.write("second");
    a.commit();
    b.commit();
  }
  EXPECT_EQ(slurp(d / "out"), "second");
  EXPECT_EQ(slurp(d / "victim"), "precious");
  // The file gets 0666 less the umask, as an ordinary create would.
  const mode_t old = ::umask(027);
  write_file_atomic((d / "mode").string(), "x");
  ::umask(old);
  EXPECT_EQ(fs::status(d / "mode").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  std::string p1, p2;
  {
    TempFile t1(d.string(), "nt-"), t2(d.string(), "nt-");
    p1 = t1.path(), p2 = t2.path();
    EXPECT_NE(p1, p2);
    EXPECT_TRUE(fs::is_regular_file(p1));
  }
  EXPECT_FALSE(fs::exists(p1));
  EXPECT_FALSE(fs::exists(p2));
}

}  // namespace
}  // namespace nt
