// SPDX-License-Identifier: MIT
// CPython's random.Random(seed) for integer seeds, bit for bit: the reference CORE harness picks
// its items (shuffle) and few-shot examples (sample) with it, so matching it item for item means
// reproducing its Mersenne Twister, its seeding and the algorithms of shuffle and sample.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace nt {

class PyRandom {
 public:
  // random.Random(seed): init_by_array over the 32-bit words of |seed|, least significant first.
  explicit PyRandom(int64_t seed);

  uint32_t genrand_uint32();
  // getrandbits(k) for 0 <= k <= 64 (words drawn least significant first, as CPython does).
  uint64_t getrandbits(int k);
  // _randbelow(n): getrandbits(bit_length(n)) until the value is below n; 0 for n == 0.
  uint64_t randbelow(uint64_t n);
  // random.shuffle(x): Fisher-Yates from the last position down.
  template <class T>
  void shuffle(std::vector<T>& x) {
    for (size_t i = x.size(); i-- > 1;) {
      const size_t j = size_t(randbelow(i + 1));
      std::swap(x[i], x[j]);
    }
  }
  // random.sample(range(n), k) as positions 0..n-1: a pool copy when n is small against k's set
  // size, else rejection against the set of chosen positions. Requires 0 <= k <= n.
  std::vector<int64_t> sample_indices(int64_t n, int64_t k);
  // random.sample(population, k).
  template <class T>
  std::vector<T> sample(const std::vector<T>& population, int64_t k) {
    std::vector<T> out;
    for (int64_t i : sample_indices(int64_t(population.size()), k)) out.push_back(population[size_t(i)]);
    return out;
  }

 private:
  void init_genrand(uint32_t s);
  void init_by_array(const std::vector<uint32_t>& key);
  static constexpr int kN = 624;
  uint32_t mt_[kN];
  int mti_ = kN + 1;
};

}  // namespace nt
