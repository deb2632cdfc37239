// SPDX-License-Identifier: MIT
// Shard files: the 128-byte header and its consistency with the file size (data/shard_format.h).
#include <cstring>

#include "data/shard_format.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nt::fuzz::expect_ok_or_error([&] {
    const nt::ShardHeader h = nt::parse_shard_header(data, size, "fuzz.bin");
    // An accepted header promises exactly token_count tokens of token_width bytes after it.
    NT_FUZZ_ASSERT(h.token_width == 2 || h.token_width == 4);
    NT_FUZZ_ASSERT(h.bos_id < h.vocab_size);
    NT_FUZZ_ASSERT(nt::kShardHeaderBytes + h.token_count * h.token_width == size);
    NT_FUZZ_ASSERT(h.doc_count <= h.token_count);
    // Read every token the way Shard::token does (ASan checks the bounds).
    const uint8_t* payload = data + nt::kShardHeaderBytes;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < h.token_count; ++i) {
      uint32_t t = 0;
      std::memcpy(&t, payload + i * h.token_width, h.token_width);
      sum += t;
    }
    (void)sum;
    (void)nt::sha256(payload, size_t(h.token_count) * h.token_width);
  });
  return 0;
}
