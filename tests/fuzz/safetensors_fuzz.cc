// SPDX-License-Identifier: MIT
// safetensors files (weights and checkpoints): the length prefix, the JSON header, dtypes,
// shapes against data offsets, the metadata, and the model config stored in it
// (model/safetensors.h, model/weights_io.h).
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "model/config.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nt::fuzz::expect_ok_or_error([&] {
    const nt::StFile f = nt::parse_safetensors(data, size, "fuzz.safetensors");
    size_t total = 0;
    for (const auto& [name, t] : f.tensors) {
      NT_FUZZ_ASSERT(t.numel() >= 0);
      total += t.bytes.size();
      NT_FUZZ_ASSERT(total <= size);
      if (t.dtype == "F32" || t.dtype == "F64") {
        const auto v = t.as_f64();
        NT_FUZZ_ASSERT(int64_t(v.size()) == t.numel());
      }
    }
    // What read_weights_config does with the metadata.
    auto it = f.metadata.find("config");
    if (it != f.metadata.end()) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(it->second);
      } catch (const nlohmann::json::exception&) {
        return;
      }
      (void)nt::ModelConfig::from_json(j);
    }
  });
  return 0;
}
