// SPDX-License-Identifier: MIT
#include "tokenizer/byte_tokenizer.h"

namespace nt {

ByteTokenizer::ByteTokenizer() : identity_(sha256(std::string_view("nanotrain byte tokenizer v1"))) {}

void ByteTokenizer::encode(std::string_view text, std::vector<uint32_t>& out) const {
  out.reserve(out.size() + text.size());
  for (unsigned char c : text) out.push_back(c);
}

std::string ByteTokenizer::decode(std::span<const uint32_t> ids) const {
  std::string s;
  s.reserve(ids.size());
  for (uint32_t id : ids) {
    if (id < 256) s.push_back(char(id));
    else s += "<|bos|>";
  }
  return s;
}

}  // namespace nt
