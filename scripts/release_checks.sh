#!/usr/bin/env bash
# The checks too long for every CI run, once before a release (about 3 hours on 2 cores):
#  1. the whole suite under ASan + UBSan, the "slow" command-line scripts included
#     (scripts/ci_sanitizers.sh asan_full), and the threaded parts under TSan;
#  2. every fuzz target for FUZZ_SECONDS (default 600) on its corpus;
#  3. the mutation check (tests/mutation/run_mutations.sh): every deliberate fault must be caught.
# CI (.ci/run) runs ./test.sh, the sanitizer suite without the "slow" scripts, 10 s of each fuzz
# target and TSan.
# usage: scripts/release_checks.sh [asan|fuzz|mutations ...]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan fuzz mutations)
start=$SECONDS
for s in "${steps[@]}"; do
  case "$s" in
    asan) scripts/ci_sanitizers.sh asan_full tsan ;;
    fuzz) FUZZ_SECONDS=${FUZZ_SECONDS:-600} scripts/ci_sanitizers.sh fuzz ;;
    mutations) tests/mutation/run_mutations.sh ;;
    *) echo "scripts/release_checks.sh: unknown step '$s' (expected asan, fuzz or mutations)" >&2; exit 2 ;;
  esac
  echo "release checks: $s done at $((SECONDS - start)) s"
done
echo "release checks: ok (${steps[*]})"
