// SPDX-License-Identifier: MIT
// Model configuration (model/config.h): config.json as stored in run folders and weights
// metadata (ModelConfig::from_json), and the shape flags (resolve_model_config).
// Input: JSON text; if it is not JSON, its bytes are read as shape-flag values instead.
#include <cstring>
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = nt::fuzz::as_string(data, size);
  nlohmann::json j;
  bool is_json = true;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    is_json = false;
  }
  if (is_json) {
    nt::fuzz::expect_ok_or_error([&] {
      const nt::ModelConfig c = nt::ModelConfig::from_json(j);
      // A config that validates round-trips through its JSON and has sane derived counts.
      const nt::ModelConfig d = nt::ModelConfig::from_json(c.to_json());
      NT_FUZZ_ASSERT(d.to_json() == c.to_json());
      NT_FUZZ_ASSERT(nt::count_params(c) > 0);
      (void)nt::flops_per_token(c, c.seq_len);
    });
    return 0;
  }
  // Shape flags: 8 ints and a double from the bytes, the preset from the first byte.
  int32_t v[8] = {};
  double rope = 0;
  std::memcpy(v, data, std::min(size, sizeof v));
  if (size > sizeof v) std::memcpy(&rope, data + sizeof v, std::min(size - sizeof v, sizeof rope));
  static const char* presets[] = {"tiny", "cpu", "frontier", "bogus"};
  nt::ShapeFlags f;
  f.preset = presets[size ? data[0] % 4 : 0];
  f.depth = v[1], f.d_model = v[2], f.n_head = v[3], f.n_kv_head = v[4], f.head_dim = v[5];
  f.seq_len = v[6], f.vocab_size = v[7], f.rope_base = rope;
  nt::fuzz::expect_ok_or_error([&] {
    const nt::ModelConfig c = nt::resolve_model_config(f, v[0]);
    c.validate();
    NT_FUZZ_ASSERT(nt::count_params(c) > 0);
  });
  return 0;
}
