#!/usr/bin/env bash
# Kills inside a checkpoint write, each at a chosen point: the writer stops itself at a test hook
# (NANOTRAIN_TEST_PAUSE_AT, core/files.h) while writing its second checkpoint, and is killed there
# with SIGKILL. Each trial asserts that the process really stopped at that point and died of the
# kill (exit 137), that the checkpoint being written is either absent (before the rename) or whole
# (after it), that the resume starts from the right checkpoint without ever skipping a damaged
# one, that it ends with the uninterrupted run's losses bit for bit, and that the temporary file
# left behind is never read and is cleaned up.
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
full_size=$(stat -c %s "$(ls "$TMP/ref/checkpoints"/step-*.safetensors | head -1)")

# The process state of pid (T: stopped), or empty once it has exited.
state() { ps -o state= -p "$1" 2>/dev/null | tr -d ' '; }

TARGET=step-00000006.safetensors  # the second checkpoint: the first (step 3) is complete by then
for stage in mid-write after-write after-fsync after-rename; do
  R="$TMP/$stage"
  CK="$R/checkpoints"
  NANOTRAIN_TEST_PAUSE_AT="$stage:$TARGET" "$NT" train "${RUN[@]}" --run-dir "$R" >/dev/null 2>"$R.err" &
  pid=$!
  for _ in $(seq 1 3000); do
    s=$(state $pid)
    [ -z "$s" ] || [ "$s" = T ] && break
    sleep 0.1
  done
  check "$stage: the writer stopped at the hook" \
    "[ '$(state $pid)' = T ] && grep -q 'test pause at $stage of .*/$TARGET\$' '$R.err'"
  tmps=$(ls "$CK"/$TARGET.*.tmp 2>/dev/null | wc -l)
  if [ $stage = after-rename ]; then
    check "$stage: the checkpoint is in place and whole, no temporary file" \
      "[ $tmps -eq 0 ] && [ \$(stat -c %s '$CK/$TARGET') -eq $full_size ]"
    from=6
  else
    tmp_size=$(stat -c %s "$CK"/$TARGET.*.tmp 2>/dev/null || echo 0)
    want_size=$([ $stage = mid-write ] && echo "-lt $full_size" || echo "-eq $full_size")
    check "$stage: only a temporary file of $tmp_size bytes (a whole one is $full_size) and no $TARGET" \
      "[ $tmps -eq 1 ] && [ $tmp_size $want_size ] && [ ! -e '$CK/$TARGET' ]"
    from=3
  fi
  kill -9 $pid 2>/dev/null
  wait $pid
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
