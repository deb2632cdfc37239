// SPDX-License-Identifier: MIT
#include "eval/core/py_random.h"

#include <cmath>
#include <unordered_set>

#include "core/check.h"

namespace nt {

namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;

int bit_length(uint64_t n) {
  int k = 0;
  while (n) {
    ++k;
    n >>= 1;
  }
  return k;
}
}  // namespace

PyRandom::PyRandom(int64_t seed) {
  uint64_t n = seed < 0 ? uint64_t(0) - uint64_t(seed) : uint64_t(seed);
  std::vector<uint32_t> key;
  do {  // seed 0 still gives one word
    key.push_back(uint32_t(n & 0xffffffffu));
    n >>= 32;
  } while (n);
  init_by_array(key);
}

void PyRandom::init_genrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + uint32_t(i);
  mti_ = kN;
}

void PyRandom::init_by_array(const std::vector<uint32_t>& key) {
  init_genrand(19650218u);
  const int len = int(key.size());
  int i = 1, j = 0;
  for (int k = kN > len ? kN : len; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[size_t(j)] + uint32_t(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= len) j = 0;
  }
  for (int k = kN - 1; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;  // the MSB is 1, assuring a non-zero initial array
}

uint32_t PyRandom::genrand_uint32() {
  if (mti_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      const uint32_t y = (mt_[kk] & kUpper) | (mt_[kk + 1] & kLower);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    for (; kk < kN - 1; ++kk) {
      const uint32_t y = (mt_[kk] & kUpper) | (mt_[kk + 1] & kLower);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    const uint32_t y = (mt_[kN - 1] & kUpper) | (mt_[0] & kLower);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    mti_ = 0;
  }
  uint32_t y = mt_[mti_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

uint64_t PyRandom::getrandbits(int k) {
  NT_CHECK(k >= 0 && k <= 64, "getrandbits(%d): only 0..64 bits", k);
  if (k == 0) return 0;
  if (k <= 32) return genrand_uint32() >> (32 - k);
  // Wider values: 32-bit words least significant first, the last one cut to the bits left.
  const uint64_t lo = genrand_uint32();
  const uint64_t hi = genrand_uint32() >> (64 - k);
  return lo | (hi << 32);
}

uint64_t PyRandom::randbelow(uint64_t n) {
  if (n == 0) return 0;
  const int k = bit_length(n);
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

std::vector<int64_t> PyRandom::sample_indices(int64_t n, int64_t k) {
  NT_CHECK(k >= 0 && k <= n, "sample of %lld from %lld", (long long)k, (long long)n);
  std::vector<int64_t> result(size_t(k), 0);
  // CPython: an n-length list is used when it is smaller than a k-length set.
  int64_t setsize = 21;
  if (k > 5) setsize += int64_t(1) << (2 * int(std::ceil(std::log(double(k * 3)) / std::log(4.0))));
  if (n <= setsize) {
    std::vector<int64_t> pool(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pool[size_t(i)] = i;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = int64_t(randbelow(uint64_t(n - i)));
      result[size_t(i)] = pool[size_t(j)];
      pool[size_t(j)] = pool[size_t(n - i - 1)];
    }
  } else {
    std::unordered_set<int64_t> selected;
    for (int64_t i = 0; i < k; ++i) {
      int64_t j = int64_t(randbelow(uint64_t(n)));
      while (selected.count(j)) j = int64_t(randbelow(uint64_t(n)));
      selected.insert(j);
      result[size_t(i)] = j;
    }
  }
  return result;
}

}  // namespace nt
