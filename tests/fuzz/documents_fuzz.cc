// SPDX-License-Identifier: MIT
// Document input (data/documents.h): JSONL records and plain text, UTF-8 validation, cutting
// long texts. Input: one mode byte (bit 0: JSONL, bits 1..7: cut size), then the file's bytes.
#include "data/documents.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool jsonl = data[0] & 1;
  nt::DocumentOptions opt;
  opt.cut_bytes = data[0] >> 1;  // 0..127: small cuts exercise the cutting paths (0 included)
  const std::string text = nt::fuzz::as_string(data + 1, size - 1);
  nt::fuzz::expect_ok_or_error([&] {
    std::vector<std::string> docs;
    nt::parse_documents(text, jsonl ? "fuzz.jsonl" : "fuzz.txt", opt, docs);
    std::string joined;
    for (const auto& d : docs) {
      NT_FUZZ_ASSERT(!d.empty());
      NT_FUZZ_ASSERT(nt::is_valid_utf8(d));
      joined += d;
    }
    if (!jsonl) NT_FUZZ_ASSERT(joined == text);  // plain text is cut, never changed
    if (docs.size() >= 2) {
      std::vector<std::string> val;
      const size_t n = docs.size();
      nt::split_documents(docs, 0.1, val);
      NT_FUZZ_ASSERT(!docs.empty() && !val.empty() && docs.size() + val.size() == n);
    }
  });
  return 0;
}
