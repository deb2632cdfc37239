// SPDX-License-Identifier: MIT
// SHA-256 (OpenSSL) for payload checksums, tokenizer identities and download verification.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nt {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  Digest finish();

 private:
  void* ctx_;
};

Digest sha256(const void* data, size_t n);
inline Digest sha256(std::string_view s) { return sha256(s.data(), s.size()); }
std::string to_hex(const Digest& d);
// Throws nt::Error naming the file if it cannot be read.
Digest sha256_file(const std::string& path);

}  // namespace nt
