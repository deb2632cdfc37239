// SPDX-License-Identifier: MIT
// Training checkpoints (train/checkpoint.h): the checksum, the safetensors layout, the metadata
// (format, version, model config, flags, trainer state) and restoring the tensors into a model.
// A mutated input almost never carries a matching SHA-256, so the target writes the correct
// checksum into the bytes before parsing (as someone crafting a file could); the checksum check
// itself is exercised by the unmodified copy parsed first.
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "model/params.h"
#include "train/checkpoint.h"
#include "train/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nt::fuzz::expect_ok_or_error([&] { (void)nt::parse_checkpoint(data, size, "fuzz.safetensors"); });
  std::vector<uint8_t> bytes(data, data + size);
  size_t digits = 0;
  const std::string sum = nt::checkpoint_checksum(bytes.data(), bytes.size(), &digits);
  if (sum.empty()) return 0;
  std::memcpy(bytes.data() + digits, sum.data(), sum.size());
  nt::fuzz::expect_ok_or_error([&] {
    const nt::CheckpointData ck = nt::parse_checkpoint(bytes.data(), bytes.size(), "fuzz.safetensors");
    NT_FUZZ_ASSERT(ck.state.step >= 0 && ck.state.lr_scale > 0 && ck.state.lr_scale <= 1);
    (void)nt::TrainConfig::from_json(ck.train);
    // Restore into the model the checkpoint declares, when it is small enough to allocate.
    if (nt::arena_numel(nt::param_specs(ck.model)) > (size_t(1) << 20)) return;
    nt::ParamArena params(ck.model);
    std::vector<float> m(params.numel()), v(params.numel());
    nt::restore_checkpoint(ck, params, m.data(), v.data());
  });
  return 0;
}
