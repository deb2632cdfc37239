// SPDX-License-Identifier: MIT
// Tokenizer files (tokenizer/bpe_tokenizer.h): a .tiktoken file with its JSON sidecar (input
// "TIKTOKEN\0SIDECAR"), or a tiktoken encoder JSON (input without a NUL byte). A tokenizer that
// loads must then encode and decode text exactly (bytes in == bytes out).
#include <cstring>

#include "fuzz_util.h"
#include "tokenizer/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = nt::fuzz::as_string(data, size);
  nt::fuzz::expect_ok_or_error([&] {
    std::unique_ptr<nt::BpeTokenizer> tok;
    const size_t nul = in.find('\0');
    if (nul == std::string::npos) tok = nt::BpeTokenizer::from_encoder_json(in, "fuzz.json");
    else tok = nt::BpeTokenizer::from_tiktoken(in.substr(0, nul), in.substr(nul + 1), "fuzz.tiktoken");
    NT_FUZZ_ASSERT(tok->bos_id() < tok->vocab_size());
    // The file's text itself is a handy, varied sample (valid and invalid UTF-8 alike).
    const std::string text = "Hello world, it's 2024!\n\t  déjà vu 😀 " + in.substr(0, 256);
    std::vector<uint32_t> ids;
    tok->encode(text, ids);
    for (uint32_t id : ids) NT_FUZZ_ASSERT(id < tok->vocab_size() && tok->token_bytes(id) > 0);
    NT_FUZZ_ASSERT(tok->decode(ids) == text);
    const uint32_t bos = tok->bos_id();
    (void)tok->decode(std::span<const uint32_t>(&bos, 1));
    // Saving gives the same tokenizer back.
    auto again = nt::BpeTokenizer::from_tiktoken(tok->tiktoken_text(), tok->sidecar_text(), "again.tiktoken");
    NT_FUZZ_ASSERT(again->identity() == tok->identity());
  });
  return 0;
}
