#!/usr/bin/env bash
# CI under sanitizers:
#  1. the whole unit-test suite (every GoogleTest binary and the command-line end-to-end test)
#     built with AddressSanitizer + UndefinedBehaviorSanitizer (g++, build-asan/);
#  2. the threaded parts (every OpenMP region: kernels, the model, data preparation, tokenizer
#     training) under ThreadSanitizer (build-tsan/).
#
# Why TSan uses clang + LLVM's OpenMP runtime with Archer: all of nanotrain's threading is OpenMP.
# GNU libgomp is not instrumented, so TSan cannot see its barriers and reports false races on
# every parallel loop. LLVM's libomp with the Archer tool (libarcher.so, loaded through
# OMP_TOOL_LIBRARIES) tells TSan about OpenMP's synchronisation, so the reports that remain are
# real. oneDNN links libgomp, but its GOMP_* calls resolve to libomp (loaded first), so its
# threads are libomp's too; oneDNN's own code is not instrumented, which hides races inside it
# but adds no false reports.
# Usage: scripts/ci_sanitizers.sh [asan|tsan]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
jobs=$(nproc)

need=()
command -v clang++ >/dev/null 2>&1 || need+=(clang)
dpkg-query -W -f='${Status}' libomp-dev 2>/dev/null | grep -q "install ok installed" || need+=(libomp-dev)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.tsan-x86_64.a" >/dev/null || need+=(libclang-rt-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ "$what" = all ] || [ "$what" = asan ]; then
  echo "== ASan + UBSan: whole suite (build-asan/)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNT_SANITIZE=address,undefined \
    -DCMAKE_CXX_FLAGS="-fno-sanitize-recover=undefined" >/dev/null
  cmake --build build-asan -j"$jobs" >/dev/null
  # detect_leaks: leaks fail too. Test binaries run the PyTorch oracle as a subprocess; that
  # process is not instrumented, so nothing is preloaded.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900
fi

if [ "$what" = all ] || [ "$what" = tsan ]; then
  echo "== TSan: OpenMP regions (build-tsan/, clang + libomp + Archer)"
  archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | sort -V | tail -1)
  [ -n "$archer" ] || { echo "libarcher.so not found (install libomp-dev)" >&2; exit 1; }
  cmake -S . -B build-tsan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNT_SANITIZE=thread >/dev/null
  tsan_tests=(kernels_test gpt_test prepare_test loader_test bpe_tokenizer_test)
  cmake --build build-tsan -j"$jobs" --target "${tsan_tests[@]}" >/dev/null
  # libomp's own allocator recycles thread-private blocks through its (uninstrumented) internal
  # locks; reports whose stacks are inside libomp are about the runtime itself, not our code.
  supp=build-tsan/tsan.supp
  printf 'race:libomp.so\n' >"$supp"
  for t in "${tsan_tests[@]}"; do
    echo "-- $t"
    OMP_TOOL_LIBRARIES="$archer" OMP_NUM_THREADS=2 \
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/$supp" \
      "build-tsan/tests/$t" --gtest_brief=1
  done
fi
echo "sanitizers: ok"
