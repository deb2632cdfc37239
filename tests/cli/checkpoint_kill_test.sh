#!/usr/bin/env bash
# Kills inside a checkpoint write, each at a chosen point: the writer stops itself at a test hook
# (NANOTRAIN_TEST_PAUSE_AT, core/files.h) while writing its second checkpoint, and is killed there
# with SIGKILL. Each trial asserts that the process really stopped at that point and died of the
# kill (exit 137), that the checkpoint being written is either absent (before the rename) or whole
# (after it), that the resume starts from the right checkpoint without ever skipping a damaged
# one, that it ends with the uninterrupted run's losses bit for bit, and that the temporary file
# left behind is never read and is cleaned up.
# Checked to fail on purpose: a binary without the hook fails "stopped at the hook" and "died of
# the kill"; stale temporary files kept by prune_checkpoints fail "cleaned up" (mutations.py).
# usage: checkpoint_kill_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
losses() { grep -o '"loss":[^,]*' "$1/metrics.jsonl"; }

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
# A schedule with every part (warm-up, flat, warm-down to a floor), checked on each step after
# the resumes.
SCHED=(--warmup-frac 0.25 --warmdown-frac 0.5 --final-lr-frac 0.1)
RUN=(--data "$TMP/data" --preset tiny --save-every 3 --steps 12 --sample-tokens 0 "${SCHED[@]}")
"$NT" train "${RUN[@]}" --quiet --run-dir "$TMP/ref" >/dev/null
check "reference run finished" "[ -s '$TMP/ref/summary.json' ]"
lr_check() { /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/lr_schedule_check.py" "$1" 0.25 0.5 0.1 steps=12 >/dev/null; }
check "reference run's learning rates follow the schedule" "lr_check '$TMP/ref'"
# whole FILE: the file is a complete checkpoint (its length as the header gives it, and the
# checksum over every byte with the checksum's own digits read as zeros matches them).
whole() {
  /usr/bin/python3 - "$1" <<'PY'
import hashlib, json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
digits = h["__metadata__"]["checksum"]
zeroed = b.replace(digits.encode(), b"0" * 64, 1)
sys.exit(0 if len(b) == 8 + n + end and hashlib.sha256(zeroed).hexdigest() == digits else 1)
PY
}
n_whole=0
for f in "$TMP/ref/checkpoints"/step-*.safetensors; do whole "$f" && n_whole=$((n_whole + 1)); done
check "a finished run's 2 checkpoints are whole (the check above works)" "[ $n_whole -eq 2 ]"

# The process state of pid (T: stopped), or empty once it has exited.
# (The field after the command's name in parentheses, which holds no space here.)
state() { cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null; }

TARGET=step-00000006.safetensors  # the second checkpoint: the first (step 3) is complete by then
for stage in mid-write after-write after-fsync after-rename; do
  R="$TMP/$stage"
  CK="$R/checkpoints"
  NANOTRAIN_TEST_PAUSE_AT="$stage:$TARGET" "$NT" train "${RUN[@]}" --run-dir "$R" >/dev/null 2>"$R.err" &
  pid=$!
  for _ in $(seq 1 3000); do
    s=$(state $pid)
    case "$s" in "" | T | Z | X) break ;; esac
    sleep 0.1
  done
  check "$stage: the writer stopped at the hook" \
    "[ '$(state $pid)' = T ] && grep -q 'test pause at $stage of .*/$TARGET\$' '$R.err'"
  tmps=$(ls "$CK"/$TARGET.*.tmp 2>/dev/null | wc -l)
  if [ $stage = after-rename ]; then
    check "$stage: the checkpoint is in place and whole, no temporary file" "[ $tmps -eq 0 ] && whole '$CK/$TARGET'"
    from=6
  else
    tmp=$(ls "$CK"/$TARGET.*.tmp 2>/dev/null | head -1)
    if [ $stage = mid-write ]; then
      check "$stage: only a torn temporary file ($(stat -c %s "$tmp" 2>/dev/null) bytes), no $TARGET" \
        "[ $tmps -eq 1 ] && ! whole '$tmp' 2>/dev/null && [ ! -e '$CK/$TARGET' ]"
    else
      check "$stage: only a whole temporary file, no $TARGET" "[ $tmps -eq 1 ] && whole '$tmp' && [ ! -e '$CK/$TARGET' ]"
    fi
    from=3
  fi
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  rc=$?
  check "$stage: the run died of the kill (exit $rc)" "[ $rc -eq 137 ] && [ ! -e '$R/summary.json' ]"

  # Resume (without the hook): from the newest whole checkpoint, skipping nothing.
  "$NT" train --resume "$R" >/dev/null 2>"$R.resume.err"
  rc=$?
  check "$stage: the resume finished (exit $rc)" "[ $rc -eq 0 ] && [ -s '$R/summary.json' ]"
  check "$stage: resumed from step $from" "grep -q 'resumed from .*/step-0000000$from.safetensors: step $from,' '$R.resume.err'"
  check "$stage: no checkpoint was skipped as damaged" "! grep -q 'skipping' '$R.resume.err'"
  check "$stage: loss curve identical to the uninterrupted run" "[ \"\$(losses '$R')\" = \"\$(losses '$TMP/ref')\" ]"
  check "$stage: learning rate after the resume on the schedule at every step" "lr_check '$R'"
  check "$stage: the temporary file was cleaned up" "[ \$(ls '$CK' | grep -c '\\.tmp\$') -eq 0 ]"
done

finish
