// SPDX-License-Identifier: MIT
#include "model/safetensors.h"

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <set>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/files.h"

namespace nt {

namespace {
size_t dtype_size(const std::string& d) {
  if (d == "F32" || d == "I32") return 4;
  if (d == "F64" || d == "I64") return 8;
  if (d == "BF16" || d == "F16" || d == "I16") return 2;
  return 0;
}
}  // namespace

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

std::vector<double> StTensor::as_f64() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  if (dtype == "F32") {
    for (size_t i = 0; i < out.size(); ++i) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      out[i] = f;
    }
  } else if (dtype == "F64") {
    std::memcpy(out.data(), bytes.data(), out.size() * 8);
  } else {
    NT_CHECK(false, "as_f64: dtype %s is not a float type", dtype.c_str());
  }
  return out;
}

StTensor st_f32(const float* data, std::vector<int64_t> shape) {
  StTensor t{"F32", std::move(shape), {}};
  t.bytes.resize(size_t(t.numel()) * 4);
  std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

StTensor st_i32(const int32_t* data, std::vector<int64_t> shape) {
  StTensor t{"I32", std::move(shape), {}};
  t.bytes.resize(size_t(t.numel()) * 4);
  std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

void save_safetensors(const std::string& path, const StFile& f) {
  nlohmann::ordered_json h;
  if (!f.metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : f.metadata) m[k] = v;
    h["__metadata__"] = m;
  }
  size_t off = 0;
  for (const auto& [name, t] : f.tensors) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  std::string hs = h.dump();
  while (hs.size() % 8 != 0) hs.push_back(' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(hs.size()) >> (8 * i));
  AtomicFile out(path);
  out.write(len, 8);
  out.write(hs);
  for (const auto& [name, t] : f.tensors) out.write(t.bytes.data(), t.bytes.size());
  out.commit();
}

StFile load_safetensors(const std::string& path) {
  MappedFile m(path);
  return parse_safetensors(m.data(), m.size(), path);
}

namespace {
// A header array of whole numbers (shape, data offsets). Anything else, a float among them
// (converting 2.4e70 to an integer is undefined), is a malformed entry.
std::vector<int64_t> whole_numbers(const nlohmann::json& j, const char* path, const std::string& tensor) {
  if (!j.is_array()) fail("%s: tensor %s: malformed header entry", path, tensor.c_str());
  std::vector<int64_t> v;
  for (const auto& x : j) {
    if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<uint64_t>() > uint64_t(INT64_MAX)))
      fail("%s: tensor %s: malformed header entry", path, tensor.c_str());
    v.push_back(x.get<int64_t>());
  }
  return v;
}

// One tensor's header entry: its dtype, shape and bytes; its byte range is appended to ranges.
StTensor parse_entry(const nlohmann::json& e, const std::string& name, const uint8_t* data, size_t data_size,
                     const char* p, std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  StTensor t;
  try {
    t.dtype = e.at("dtype").get<std::string>();
    t.shape = whole_numbers(e.at("shape"), p, name);
    std::vector<uint64_t> offs;
    for (int64_t o : whole_numbers(e.at("data_offsets"), p, name)) {
      if (o < 0) fail("%s: tensor %s has data offsets outside the file", p, name.c_str());
      offs.push_back(uint64_t(o));
    }
    const size_t es = dtype_size(t.dtype);
    if (es == 0) fail("%s: tensor %s has unsupported dtype %s", p, name.c_str(), t.dtype.c_str());
    if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_size)
      fail("%s: tensor %s has data offsets outside the file", p, name.c_str());
    uint64_t n = 1;
    for (auto s : t.shape) {
      if (s < 0 || (s > 0 && n > (uint64_t(1) << 40) / uint64_t(s))) fail("%s: tensor %s has an impossible shape", p, name.c_str());
      n *= uint64_t(s);
    }
    if (n * es != offs[1] - offs[0]) fail("%s: tensor %s: shape does not match its byte size", p, name.c_str());
    t.bytes.assign(data + offs[0], data + offs[1]);
    ranges.emplace_back(offs[0], offs[1]);
  } catch (const nlohmann::json::exception&) {
    fail("%s: tensor %s: malformed header entry", p, name.c_str());
  }
  return t;
}

}  // namespace

StFile parse_safetensors(const uint8_t* bytes, size_t size, const std::string& path) {
  struct {
    const uint8_t* b;
    size_t n;
    const uint8_t* data() const { return b; }
    size_t size() const { return n; }
  } m{bytes, size};
  const char* p = path.c_str();
  if (m.size() < 8) fail("%s: not a safetensors file (too short)", p);
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= uint64_t(m.data()[i]) << (8 * i);
  if (hlen > m.size() - 8 || hlen > (uint64_t(100) << 20)) fail("%s: corrupt safetensors header length %llu", p, (unsigned long long)hlen);
  nlohmann::json h;
  // The format forbids a name twice; a JSON parser would silently keep the last one.
  std::set<std::string> names;
  std::string duplicate;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && !names.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    h = nlohmann::json::parse(reinterpret_cast<const char*>(m.data()) + 8,
                              reinterpret_cast<const char*>(m.data()) + 8 + hlen, on_event);
  } catch (const nlohmann::json::exception&) {
    fail("%s: corrupt safetensors header (not JSON)", p);
  }
  if (!duplicate.empty()) fail("%s: the header names %s twice", p, duplicate.c_str());
  if (!h.is_object()) fail("%s: corrupt safetensors header (not an object)", p);
  const size_t data_size = m.size() - 8 - hlen;
  const uint8_t* data = m.data() + 8 + hlen;
  StFile f;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // every tensor's [begin, end) in the data
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail("%s: corrupt safetensors metadata", p);
      for (auto mt = it->begin(); mt != it->end(); ++mt) {
        if (!mt->is_string()) fail("%s: metadata value for %s is not a string", p, mt.key().c_str());
        f.metadata[mt.key()] = mt->get<std::string>();
      }
      continue;
    }
    f.tensors[it.key()] = parse_entry(*it, it.key(), data, data_size, p, ranges);
  }
  // The tensors tile the data exactly: no byte read twice (overlaps) and none unread (holes,
  // where a second file could hide).
  std::sort(ranges.begin(), ranges.end());
  uint64_t end = 0;
  for (const auto& [b, e] : ranges) {
    if (b < end) fail("%s: two tensors share bytes %llu..%llu of the data", p, (unsigned long long)b, (unsigned long long)end);
    if (b > end) fail("%s: bytes %llu..%llu of the data belong to no tensor", p, (unsigned long long)end, (unsigned long long)b);
    end = e;
  }
  if (end != data_size)
    fail("%s: bytes %llu..%llu of the data belong to no tensor", p, (unsigned long long)end, (unsigned long long)data_size);
  return f;
}

}  // namespace nt
