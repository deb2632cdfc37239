#!/usr/bin/env bash
# The sanitizer and fuzzing half of CI (.ci/run runs it after ./test.sh):
#  asan  the test suite built with clang, AddressSanitizer + UndefinedBehaviorSanitizer, in
#        build-fuzz/ -- the same build the fuzzers use, so CI compiles it once: every GoogleTest
#        binary and the command-line scripts except the ones labelled "slow" (minutes of
#        training, timing or CORE evaluation, 3-5 times slower under ASan; ./test.sh runs them)
#        and "build" (checks of the sources and the build, which a sanitizer adds nothing to);
#  asan_full  the same with the "slow" scripts too (scripts/release_checks.sh);
#  fuzz  every libFuzzer target for FUZZ_SECONDS (default 10) on its seed corpus
#        (tests/fuzz/run_fuzzers.sh; a longer campaign is `tests/fuzz/run_fuzzers.sh 600`);
#  tsan  the threaded parts (every OpenMP region: kernels, the model, bf16 training, Muon, data
#        preparation, the loader, tokenizer training, the profiler, and a short `nanotrain
#        train`) under ThreadSanitizer, in build-tsan/, after a canary with a deliberate race
#        proves that TSan sees through OpenMP.
#
# Why TSan uses clang + LLVM's OpenMP runtime with Archer: all of nanotrain's threading is OpenMP.
# GNU libgomp is not instrumented, so TSan cannot see its barriers and reports false races on
# every parallel loop. LLVM's libomp with the Archer tool (libarcher.so, loaded through
# OMP_TOOL_LIBRARIES) tells TSan about OpenMP's synchronisation, so the reports that remain are
# real. oneDNN links libgomp, but its GOMP_* calls resolve to libomp (loaded first), so its
# threads are libomp's too; oneDNN's own code is not instrumented, which hides races inside it
# but adds no false reports.
# Both builds leave MPI out (-DNT_MPI=OFF): OpenMPI is not instrumented and keeps memory to its
# exit, which LeakSanitizer would report; ./test.sh builds and tests with MPI where it is found.
# Usage: scripts/ci_sanitizers.sh [asan|asan_full|fuzz|tsan ...]   (default: asan fuzz tsan)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan fuzz tsan)
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-10}
# Line tables are all a sanitizer report needs (file:line in each frame); full debug information
# would double the compile and link time.
debug_info=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG")

need=()
command -v clang++ >/dev/null 2>&1 || need+=(clang)
dpkg-query -W -f='${Status}' libomp-dev 2>/dev/null | grep -q "install ok installed" || need+=(libomp-dev)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.tsan-x86_64.a" >/dev/null || need+=(libclang-rt-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

asan() {
  local exclude=${1-slow|build}
  echo "== ASan + UBSan: the suite${exclude:+ without the labels $exclude} (build-fuzz/, clang)"
  cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${debug_info[@]}" -DNT_FUZZ=ON -DNT_WERROR=ON -DNT_MPI=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" >/dev/null
  # detect_leaks: leaks fail too. Test binaries run the PyTorch oracle as a subprocess; that
  # process is not instrumented, so nothing is preloaded.
  # NT_HOSTILE_MAX_MB: ASan's shadow memory and quarantine raise every process's peak RSS, so the
  # hostile-input suite's 200 MB bound (measured on the release build) is relaxed here.
  # LSAN_OPTIONS: allocations that LLVM's OpenMP runtime keeps to the end are not ours
  # (tests/sanitizers/lsan.supp).
  NT_HOSTILE_MAX_MB=1500 \
  LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0" \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-fuzz --output-on-failure -j"$jobs" --timeout 900 ${exclude:+-LE "$exclude"}
}

asan_full() { asan build; }

fuzz() {
  echo "== libFuzzer: every target for ${fuzz_seconds}s"
  tests/fuzz/run_fuzzers.sh "$fuzz_seconds"
}

tsan() {
  echo "== TSan: OpenMP regions (build-tsan/, clang + libomp + Archer)"
  local archer
  archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2>/dev/null | sort -V | tail -1)
  [ -n "$archer" ] || { echo "libarcher.so not found (install libomp-dev)" >&2; exit 1; }
  mkdir -p build-tsan
  # ignore_noninstrumented_modules: accesses made inside libomp and oneDNN (not instrumented)
  # are not reported. No suppression file: a "race:libomp.so" rule would match every race in
  # a parallel region (each one's stack passes through libomp), as the canary showed.
  export OMP_TOOL_LIBRARIES="$archer" OMP_NUM_THREADS=2
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1"

  echo "-- canary: a deliberate race must be reported"
  clang++ -O1 -g -fopenmp -fsanitize=thread tests/sanitizers/omp_race_canary.cc -o build-tsan/omp_race_canary
  if build-tsan/omp_race_canary >build-tsan/canary.log 2>&1 || ! grep -q "WARNING: ThreadSanitizer: data race" build-tsan/canary.log; then
    cat build-tsan/canary.log >&2
    echo "TSan did not report the canary's race: the TSan set-up is broken" >&2
    exit 1
  fi

  cmake -S . -B build-tsan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${debug_info[@]}" -DNT_SANITIZE=thread -DNT_MPI=OFF >/dev/null
  local tests=(grad_test matmul_test matmul_bf16_test gemm_f32_paths_test gemm_bf16_paths_test attention_test rows_test
    elementwise_test kernel_tables_test exec_context_test bf16_train_test gpt_test optimizer_test prepare_test loader_test bpe_tokenizer_test
    profile_test)
  cmake --build build-tsan -j"$jobs" --target "${tests[@]}" nanotrain >/dev/null
  for t in "${tests[@]}"; do
    echo "-- $t"
    "build-tsan/tests/$t" --gtest_brief=1
  done
  echo "-- nanotrain train (data prepare, 2 steps with checkpoints, eval, sample, resume)"
  local tmp=build-tsan/train_tmp
  rm -rf "$tmp" && mkdir -p "$tmp/in"
  for i in 1 2 3 4 5 6 7 8; do
    printf 'Document %d. The quick brown fox jumps over the lazy dog, again and again.\n' "$i" >"$tmp/in/d$i.txt"
  done
  build-tsan/nanotrain data prepare --input "$tmp/in" --out "$tmp/data" --quiet
  build-tsan/nanotrain train --data "$tmp/data" --preset tiny --steps 2 --save-every 1 --eval-tokens 256 \
    --sample-tokens 8 --run-dir "$tmp/run" --quiet
  build-tsan/nanotrain train --resume "$tmp/run" --quiet
}

for s in "${steps[@]}"; do
  case "$s" in
    asan | asan_full | fuzz | tsan) "$s" ;;
    *) echo "scripts/ci_sanitizers.sh: unknown step '$s' (expected asan, asan_full, fuzz or tsan)" >&2; exit 2 ;;
  esac
done
echo "sanitizers: ok (${steps[*]})"
