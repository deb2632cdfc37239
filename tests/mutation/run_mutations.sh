#!/usr/bin/env bash
# Mutation check: applies each deliberate fault of tests/mutation/mutations.py, one at a time, to a
# copy of the sources, rebuilds the tests that cover it and expects them to FAIL; a fault the tests
# do not notice is reported as "survived" and the script exits 1. Run it before a release (about
# 20-40 minutes on 2 cores, much less with ccache), not in every CI run.
# usage: tests/mutation/run_mutations.sh [WORK_DIR]   (default: $TMPDIR/nanotrain-mutations)
#        FROM=N ...: start at the N-th fault (0-based), e.g. to continue a run
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-${TMPDIR:-/tmp}/nanotrain-mutations}
rm -rf "$WORK" && mkdir -p "$WORK"
(cd "$SRC" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$WORK"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$WORK" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null || exit 1
cd "$WORK"
mapfile -t rows < <(/usr/bin/python3 - <<'PY'
import sys
sys.path.insert(0, "tests/mutation")
from mutations import MUTATIONS
for i, m in enumerate(MUTATIONS):
    print(f"{i}\t{m[0]}\t{m[1]}\t{m[4]}\t{m[5]}")
PY
)
apply() {  # apply INDEX faulty|original
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
sys.path.insert(0, "tests/mutation")
from mutations import MUTATIONS
name, path, good, bad, _, _ = MUTATIONS[int(sys.argv[1])]
src, dst = (good, bad) if sys.argv[2] == "faulty" else (bad, good)
text = open(path).read()
if text.count(src) != 1:
    sys.exit(f"{path}: the text of '{name}' occurs {text.count(src)} times (expected once)")
open(path, "w").write(text.replace(src, dst))
PY
}
caught=0 survived=0
printf '%-55s %s\n' "fault" "result"
for row in "${rows[@]}"; do
  IFS=$'\t' read -r i name file targets regex <<<"$row"
  [ "$i" -ge "${FROM:-0}" ] || continue
  # The unchanged sources must pass these tests first, or a failure would prove nothing.
  cmake --build build -j"$(nproc)" --target $targets >/dev/null 2>&1 &&
    ctest --test-dir build -R "$regex" --no-tests=error >/dev/null 2>&1 ||
    { echo "$name: its tests fail without the fault (or do not build): fix that first"; exit 1; }
  apply "$i" faulty || exit 1
  if cmake --build build -j"$(nproc)" --target $targets >/dev/null 2>&1 &&
    ctest --test-dir build -R "$regex" --no-tests=error >/dev/null 2>&1; then
    survived=$((survived + 1)); result="SURVIVED ($file)"
  else
    caught=$((caught + 1)); result="caught"
  fi
  printf '%-55s %s\n' "$name" "$result"
  apply "$i" original || exit 1
  # Rebuilt unchanged, so that a later fault's tests never run a binary built with this one.
  cmake --build build -j"$(nproc)" --target $targets >/dev/null 2>&1
done
echo "$caught of $((caught + survived)) faults caught"
[ "$survived" -eq 0 ]
