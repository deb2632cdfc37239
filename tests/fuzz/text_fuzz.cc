// SPDX-License-Identifier: MIT
// Text decoding: UTF-8 validation (data/documents.h and the pre-tokenizer's own check agree),
// base64 (the .tiktoken token encoding), and exact encode/decode round trips of arbitrary bytes
// through the byte tokenizer and a small trained BPE tokenizer; decoding arbitrary ids.
#include <cstring>

#include "data/documents.h"
#include "fuzz_util.h"
#include "tokenizer/base64.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/pretokenizer.h"

namespace {
const nt::BpeTokenizer& small_bpe() {
  static const std::unique_ptr<nt::BpeTokenizer> tok = [] {
    std::vector<std::string> docs = {
        "The quick brown fox jumps over the lazy dog. It's 2024 and the fox is 12 years old.\n",
        "Ceci n'est pas une pipe — déjà vu, naïve café, 東京, Привет мир, 😀😀 emoji!\n\n",
        "def f(x):\n    return x * 2  # comment\n\tindent\r\n", "aaaa bbbb aaaa bbbb 1234567890 ...!!!???"};
    nt::BpeTrainOptions opt;
    opt.vocab_size = 256 + 9 + 120;
    return nt::train_bpe(docs, opt);
  }();
  return *tok;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = nt::fuzz::as_string(data, size);
  // UTF-8: both validators agree, and the reported offset is where the valid prefix ends.
  size_t bad = 0;
  const bool valid = nt::is_valid_utf8(in, &bad);
  const size_t prefix = nt::valid_utf8_prefix(data, size);
  NT_FUZZ_ASSERT(valid == (prefix == size));
  if (!valid) NT_FUZZ_ASSERT(bad == prefix);
  // base64.
  NT_FUZZ_ASSERT(nt::base64_decode(nt::base64_encode(in)).value_or("") == in || in.empty());
  if (auto dec = nt::base64_decode(in)) NT_FUZZ_ASSERT(nt::base64_decode(nt::base64_encode(*dec)) == dec);
  // Round trips of arbitrary bytes.
  static const nt::ByteTokenizer bytes;
  std::vector<uint32_t> ids;
  bytes.encode(in, ids);
  NT_FUZZ_ASSERT(bytes.decode(ids) == in);
  const auto& bpe = small_bpe();
  ids.clear();
  nt::fuzz::expect_ok_or_error([&] {  // PCRE2 may refuse a text too complex for the pattern
    bpe.encode(in, ids);
    for (uint32_t id : ids) NT_FUZZ_ASSERT(id < bpe.vocab_size() && bpe.token_bytes(id) > 0);
    NT_FUZZ_ASSERT(bpe.decode(ids) == in);
  });
  // Decoding arbitrary ids: text or nt::Error, never a crash.
  std::vector<uint32_t> raw(size / 4);
  if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * 4);
  for (auto& id : raw) id %= 2 * bpe.vocab_size();
  nt::fuzz::expect_ok_or_error([&] { (void)bpe.decode(raw); });
  nt::fuzz::expect_ok_or_error([&] { (void)bytes.decode(raw); });
  return 0;
}
