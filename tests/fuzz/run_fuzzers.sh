#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, in build-fuzz/) and runs each one for
# SECONDS on its seed corpus in tests/fuzz/corpus/<target>/. Fails on any crash, sanitizer
# report, leak, timeout or out-of-memory; the reproducer is left in build-fuzz/artifacts/.
#   tests/fuzz/run_fuzzers.sh            # 20 s per target (CI)
#   tests/fuzz/run_fuzzers.sh 600        # a longer run
#   tests/fuzz/run_fuzzers.sh 60 tokenizer text   # some targets only
# New inputs found go to build-fuzz/corpus/<target>/ (the committed seeds are never modified);
# to keep an interesting one, copy it into tests/fuzz/corpus/<target>/.
# Reproduce a failure: build-fuzz/fuzz/<target>_fuzz build-fuzz/artifacts/<target>-crash-...
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
shift || true
jobs=${NT_FUZZ_JOBS:-$(nproc)}

# clang and its sanitizer/libFuzzer runtimes (Debian packages).
need=()
command -v clang++ >/dev/null 2>&1 || need+=(clang)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || need+=(libclang-rt-dev)
dpkg-query -W -f='${Status}' libomp-dev 2>/dev/null | grep -q "install ok installed" || need+=(libomp-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do t=$(basename "$f" .cc); targets+=("${t%_fuzz}"); done
fi
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNT_FUZZ=ON >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=("${t}_fuzz"); done
mkdir -p build-fuzz/artifacts build-fuzz/logs
if ! cmake --build build-fuzz -j"$(nproc)" --target "${build_targets[@]}" >build-fuzz/logs/build.log 2>&1; then
  grep -E -B2 -A8 "error" build-fuzz/logs/build.log | head -80 >&2
  echo "build of the fuzz targets failed (build-fuzz/logs/build.log)" >&2
  exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_one() {
  local t=$1
  mkdir -p "build-fuzz/corpus/$t"
  # -timeout: one input taking > 10 s is a hang; -rss_limit_mb: a huge allocation is a bug.
  if "build-fuzz/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
       "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"build-fuzz/logs/$t.log" 2>&1; then
    echo "fuzz $t: ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/logs/$t.log" | grep -o '[0-9]*$') runs in ${seconds}s)"
  else
    echo "fuzz $t: FAILED (log build-fuzz/logs/$t.log)" >&2
    grep -E -A25 "ERROR|runtime error|fuzz assertion|internal error|deadly signal" "build-fuzz/logs/$t.log" | head -60 >&2
    return 1
  fi
}
# Targets run $jobs at a time (each is single-threaded).
failed=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if [ $failed -ne 0 ]; then echo "fuzzing found failures (reproducers in build-fuzz/artifacts/)" >&2; exit 1; fi
echo "fuzzing: all ${#targets[@]} targets ran ${seconds}s each without a failure"
