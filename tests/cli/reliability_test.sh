#!/usr/bin/env bash
# Crash safety: runs killed with SIGKILL at random moments and resumed give the uninterrupted
# run's loss curve bit for bit (kills at chosen points inside a checkpoint write are
# checkpoint_kill_test.sh's); SIGINT/SIGTERM stop cleanly with 130/143;
# corrupt checkpoints are skipped; non-finite losses stop with a message naming the step and
# tensor. usage: reliability_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
losses() { grep -o '"loss":[^,]*' "$1/metrics.jsonl"; }

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
BASE=(--data "$TMP/data" --preset tiny --save-every 3 --sample-tokens 0 --quiet)
COMMON=("${BASE[@]}" --steps 40)
"$NT" train "${COMMON[@]}" --run-dir "$TMP/ref" >/dev/null
check "reference run finished" "[ -s '$TMP/ref/summary.json' ]"

# SIGKILL at pseudo-random moments until the run completes; resume each time.
kills=0
for trial in 1 2 3; do
  R="$TMP/kill$trial"
  rm -rf "$R"
  landed=0 resumed=0  # kills that ended a run (exit 137), and runs resumed after one
  for attempt in $(seq 1 30); do
    if [ -d "$R/checkpoints" ] && ls "$R/checkpoints"/step-*.safetensors >/dev/null 2>&1; then
      [ $landed -gt 0 ] && resumed=$((resumed + 1))
      "$NT" train --resume "$R" --quiet >/dev/null 2>>"$R.err" &
    else
      "$NT" train "${COMMON[@]}" --run-dir "$R" --overwrite >/dev/null 2>>"$R.err" &  # (killed before its first checkpoint)
    fi
    pid=$!
    # A random moment that grows with the attempt, so slow builds (sanitizers) still finish.
    if [ $landed -eq 0 ]; then
      # The first kill right after the first checkpoint appears: it lands mid-run (37 steps are
      # left), and the next attempt resumes from it.
      for _ in $(seq 1 1500); do
        ls "$R/checkpoints"/step-*.safetensors >/dev/null 2>&1 || ! kill -0 $pid 2>/dev/null && break
        sleep 0.02
      done
    else
      sleep "$(( attempt / 4 )).$(( (RANDOM % 9) + 1 ))$(( RANDOM % 10 ))"
    fi
    if kill -9 $pid 2>/dev/null; then kills=$((kills + 1)); fi
    wait $pid 2>/dev/null
    [ $? -eq 137 ] && landed=$((landed + 1))
    [ -s "$R/summary.json" ] && break
  done
  check "trial $trial: a kill landed and the run was resumed after it ($landed kills, $resumed resumes)" \
    "[ $landed -gt 0 ] && [ $resumed -gt 0 ]"
  check "trial $trial: finished after kills" "[ -s '$R/summary.json' ]"
  check "trial $trial: loss curve identical to the uninterrupted run" "[ \"\$(losses '$R')\" = \"\$(losses '$TMP/ref')\" ]"
  check "trial $trial: no checkpoint was ever unreadable" "! grep -q 'skipping' '$R.err'"
done
echo "     ($kills SIGKILLs delivered)"

# Waits (up to 120 s) until a run has logged its first step.
wait_started() { for _ in $(seq 1 1200); do [ -s "$1/metrics.jsonl" ] && return; sleep 0.1; done; }

# SIGINT and SIGTERM: finish the step, checkpoint, exit 130 / 143 with a resume hint.
for sig in INT TERM; do
  R="$TMP/sig$sig"
  "$NT" train --data "$TMP/data" --preset tiny --steps 100000 --sample-tokens 0 --run-dir "$R" >/dev/null 2>"$R.err" &
  pid=$!
  wait_started "$R"
  sleep 0.3
  kill -$sig $pid
  wait $pid
  rc=$?
  want=$([ $sig = INT ] && echo 130 || echo 143)
  check "SIG$sig exits $want (got $rc)" "[ $rc -eq $want ]"
  check "SIG$sig says how to resume" "grep -q -- '--resume $R' '$R.err'"
  check "SIG$sig left a checkpoint" "ls '$R/checkpoints'/step-*.safetensors >/dev/null 2>&1"
done

# Twenty SIGTERMs at random moments of fp32 steps (oneDNN's JIT GEMMs, single-threaded): each
# stops cleanly. A signal handled on a compute thread corrupted the heap in about 1 run in 8
# (the signal's frame overwrote the JIT code's data below its stack pointer); 20 trials catch
# that with 94 % probability.
clean=0
for i in $(seq 1 20); do
  R="$TMP/term$i"
  "$NT" train --data "$TMP/data" --preset tiny --dtype fp32 --threads 1 --steps 100000 --sample-tokens 0 \
    --save-every 0 --run-dir "$R" >/dev/null 2>"$R.err" &
  pid=$!
  wait_started "$R"
  sleep "0.$((RANDOM % 10))"
  kill -TERM $pid
  wait $pid
  rc=$?
  [ $rc -eq 143 ] && [ "$(ls "$R/checkpoints" | wc -l)" -eq 1 ] && clean=$((clean + 1))
  rm -rf "$R"
done
check "20 SIGTERMs during fp32 steps each stop cleanly with one checkpoint ($clean of 20)" "[ $clean -eq 20 ]"

# A corrupt or truncated newest checkpoint is skipped; the resumed run still matches.
R="$TMP/corrupt"
"$NT" train "${BASE[@]}" --steps 9 --run-dir "$TMP/ref9" >/dev/null
"$NT" train "${BASE[@]}" --steps 9 --keep-checkpoints 3 --run-dir "$R" >/dev/null
newest=$(ls "$R/checkpoints"/step-*.safetensors | sort | tail -1)
printf '\x55' | dd of="$newest" bs=1 seek=5000 conv=notrunc status=none
rm -f "$R/summary.json"
err=$("$NT" train --resume "$R" --quiet 2>&1 >/dev/null)
check "bit-flipped checkpoint is skipped with a warning naming it" "grep -q \"$(basename "$newest"): corrupt checkpoint (checksum mismatch)\" <<<\"\$err\""
check "resumed from the older checkpoint, same losses" "[ \"\$(losses '$R')\" = \"\$(losses '$TMP/ref9')\" ]"
newest=$(ls "$R/checkpoints"/step-*.safetensors | sort | tail -1)
truncate -s 1000 "$newest"
err=$("$NT" train --resume "$R" --quiet 2>&1 >/dev/null)
check "truncated checkpoint is skipped" "grep -q 'skipping' <<<\"\$err\""

# Bad uses of --resume, and non-finite losses.
err=$("$NT" train --resume "$R" --steps 5 2>&1 >/dev/null); rc=$?
check "--resume with other flags is refused" "[ $rc -ne 0 ] && grep -q 'cannot be combined with --resume' <<<\"\$err\""
err=$("$NT" train --resume "$TMP/none" 2>&1 >/dev/null); rc=$?
check "--resume of a folder without checkpoints is one clear line" "[ $rc -ne 0 ] && [ \$(wc -l <<<\"\$err\") -eq 1 ] && grep -q 'no checkpoints' <<<\"\$err\""
err=$("$NT" train --data "$TMP/data" --preset tiny --steps 20 --lr-embed 1e30 --lr-matrix 1e30 --run-dir "$TMP/nan" --quiet 2>&1 >/dev/null); rc=$?
check "non-finite training stops naming step and tensor" "[ $rc -ne 0 ] && grep -qE 'step [0-9]+: (the gradient of [a-z_.0-9]+|the loss) is not finite' <<<\"\$err\""
err=$("$NT" train --data "$TMP/data" --preset tiny --steps 20 --lr-embed 1e30 --lr-matrix 1e30 --save-every 1 --on-nan rollback --run-dir "$TMP/nan2" --quiet 2>&1 >/dev/null); rc=$?
check "--on-nan rollback retries with halved rates, then stops" "[ $rc -ne 0 ] && grep -q 'no rollback left' <<<\"\$err\""

# A time-budgeted run stopped halfway continues with the remaining budget.
R="$TMP/budget"
"$NT" train --data "$TMP/data" --preset tiny --time-budget 4s --save-every 0 --sample-tokens 0 --run-dir "$R" \
  --warmup-frac 0.1 --final-lr-frac 0.2 >/dev/null 2>&1 &
pid=$!
wait_started "$R"
sleep 1.5
kill -INT $pid
wait $pid
rc=$?
check "the budgeted run was stopped by SIGINT before its end (exit $rc)" "[ $rc -eq 130 ] && [ ! -e '$R/summary.json' ]"
"$NT" train --resume "$R" --quiet >/dev/null
rc=$?
check "the resumed budget run finished (exit $rc)" "[ $rc -eq 0 ] && [ -s '$R/summary.json' ]"
# The schedule runs on training time, continued across the stop: each step's learning rate is the
# schedule's at the training time used before it. (Checked to fail on purpose: a resume that does
# not restore the time used, or progress counted from the resume, fails it.)
check "the budget run's learning rates follow the schedule in training time, across the resume" \
  "/usr/bin/python3 '$(dirname "${BASH_SOURCE[0]}")/lr_schedule_check.py' '$R' 0.1 0.5 0.2 budget=4 >/dev/null"
# The stop rule, independent of how loaded the machine is: the last step started before the
# budget was used up (it may then run long), and the run did not stop more than a step early.
check "resumed budget run ends at the budget (its last step started before 4 s, none was left out)" "/usr/bin/python3 -c '
import json
s = json.load(open(\"$R/summary.json\"))
last = [j for j in map(json.loads, open(\"$R/metrics.jsonl\")) if j[\"type\"] == \"step\"][-1]
assert s[\"train_seconds\"] - last[\"step_seconds\"] < 4 <= s[\"train_seconds\"] + s[\"mean_step_seconds\"] + 0.05, (s, last)'"

finish
