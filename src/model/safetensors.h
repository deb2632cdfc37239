// SPDX-License-Identifier: MIT
// safetensors files: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then raw little-endian data.
// Used for the final weights (PyTorch users load them directly) and by the parity tests.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nt {

struct StTensor {
  std::string dtype;  // "F32", "F64", "I32"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  int64_t numel() const;
  std::vector<double> as_f64() const;  // any float dtype, widened
};

struct StFile {
  std::map<std::string, StTensor> tensors;
  std::map<std::string, std::string> metadata;
};

StTensor st_f32(const float* data, std::vector<int64_t> shape);
StTensor st_i32(const int32_t* data, std::vector<int64_t> shape);
// Written atomically (temporary name, fsync, rename).
void save_safetensors(const std::string& path, const StFile& f);
// Validates the header (JSON, dtypes, shapes vs offsets vs file size); errors name the file.
StFile load_safetensors(const std::string& path);
// The same from memory (the whole file's bytes); `name` is used in messages.
StFile parse_safetensors(const uint8_t* bytes, size_t size, const std::string& name);

}  // namespace nt
