// SPDX-License-Identifier: MIT
// A deliberate data race inside an OpenMP loop. scripts/ci_sanitizers.sh builds it exactly like
// the ThreadSanitizer suite and requires TSan to report it: proof that TSan, LLVM's OpenMP
// runtime and Archer are wired up, so that a clean TSan run means something.
#include <cstdio>

int main() {
  long sum = 0;
#pragma omp parallel for num_threads(2)
  for (int i = 0; i < 100000; ++i) sum += i;  // unsynchronised read-modify-write
  std::printf("%ld\n", sum);
  return 0;
}
