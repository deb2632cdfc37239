#!/usr/bin/env bash
# Sweep processes sharing one sweep folder (--parallel-hosts, as on hosts over a shared file
# system, here two processes of this machine; and the ranks of an mpirun launch): every run trains
# exactly once, in one process at a time, each logging steps 1..N once; a process killed in a run
# lets it go, and another process resumes it from its checkpoint; status.json ends with every run
# done and the process that ran each; a lone sweep and a shared one never work on one folder.
# usage: sweep_parallel_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
PY=/usr/bin/python3

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
STEPS=60
sweep_args() {  # sweep_args OUT: 4 runs of 60 steps, one thread each
  echo sweep --out "$1" --grid 'lr-matrix=0.01,0.02' --seeds 2 --data "$TMP/data" --preset tiny --steps $STEPS \
    --save-every 10 --eval-every 0 --eval-tokens 2048 --sample-tokens 0 --threads 1
}
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }
# every run: a summary, and steps 1..STEPS logged once each in its metrics.
each_run_once() {
  $PY - "$1" "$STEPS" <<'PY'
import json, sys, glob, os
runs = sorted(glob.glob(os.path.join(sys.argv[1], "0*")))
assert len(runs) == 4, runs
for r in runs:
    assert os.path.exists(os.path.join(r, "summary.json")), r
    steps = [j["step"] for j in map(json.loads, open(os.path.join(r, "metrics.jsonl"))) if j.get("type") == "step"]
    assert steps == list(range(1, int(sys.argv[2]) + 1)), (r, steps[:5], len(steps))
PY
}
# how many processes' logs say each run finished in them: exactly one each.
finished_once() {
  local out=$1
  shift
  for r in "$out"/0*/; do
    n=$(cat "$@" | grep -c "$(basename "$r"): done, val_bpb")
    [ "$n" -eq 1 ] || return 1
  done
}

# start_two OUT NAME: two sharing processes on OUT, 0.2 s apart, logging to NAME1.out and NAME2.out;
# their pids in p1 and p2.
start_two() {
  "$NT" $(sweep_args "$1") --parallel-hosts >"$TMP/${2}1.out" 2>&1 &
  p1=$!
  sleep 0.2
  "$NT" $(sweep_args "$1") --parallel-hosts >"$TMP/${2}2.out" 2>&1 &
  p2=$!
}

# Two processes started 0.2 s apart on one folder.
A="$TMP/a"
start_two "$A" a
wait $p1; rc1=$?
wait $p2; rc2=$?
check "two sharing processes both finish (exit $rc1, $rc2)" "[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]"
check "every run trained once, steps 1..$STEPS logged once each" "each_run_once '$A'"
check "each run finished in exactly one of the two processes" "finished_once '$A' '$TMP/a1.out' '$TMP/a2.out'"
check "both processes trained runs" \
  "grep -q ': done, val_bpb' '$TMP/a1.out' && grep -q ': done, val_bpb' '$TMP/a2.out'"
check "status.json: done, 4 runs done, each with the process that ran it, two processes in all" \
  "[ \"\$(json '$A/status.json' 'd[\"state\"], d[\"counts\"][\"done\"], len(set(r[\"worker\"] for r in d[\"runs\"]))')\" = \"('done', 4, 2)\" ]"
"$NT" runs "$A" --per-run --json >"$TMP/runs.json"
check "the leaderboard over the shared folder lists the 4 runs" "[ \"\$(json '$TMP/runs.json' 'len(d[\"runs\"])')\" = 4 ]"
done_sums=$(sha256sum "$A"/0*/summary.json)
"$NT" $(sweep_args "$A") --parallel-hosts >"$TMP/a3.out" 2>&1
check "started again, a sharing process skips the 4 finished runs" \
  "[ \$(grep -c 'already done' '$TMP/a3.out') -eq 4 ] && [ \"\$(sha256sum '$A'/0*/summary.json)\" = \"$done_sums\" ]"

# One of two processes killed (SIGKILL) in a run, once that run has a checkpoint: the other takes
# the run over when it looks again, and resumes it.
B="$TMP/b"
start_two "$B" b
k=$p1 s=$p2
killed=""
for _ in $(seq 1 1200); do
  killed=$($PY - "$B/status.json" "$k" <<'PY' 2>/dev/null
import json, sys, glob, os
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    if r["state"] == "running" and r.get("worker", "").startswith(sys.argv[2] + " ") and \
       glob.glob(os.path.join(r["dir"], "checkpoints", "step-*.safetensors")):
        print(r["name"])
PY
)
  [ -n "$killed" ] && break
  sleep 0.05
done
kill -9 $k
wait $k 2>/dev/null
wait $s; rc=$?
check "a process was killed inside a run that had a checkpoint ($killed)" "[ -n '$killed' ]"
check "the other process finishes (exit $rc)" "[ $rc -eq 0 ]"
check "it resumed the killed process's run" "grep -q '$killed: resumed' '$TMP/b2.out'"
check "every run trained, steps 1..$STEPS logged once each" "each_run_once '$B'"
check "status.json: done, 4 runs done" \
  "[ \"\$(json '$B/status.json' 'd[\"state\"], d[\"counts\"][\"done\"]')\" = \"('done', 4)\" ]"

# A lone sweep and sharing ones never work on one folder; a different plan is refused.
C="$TMP/c"
"$NT" $(sweep_args "$C") >"$TMP/c1.out" 2>&1 &
lone=$!
for _ in $(seq 1 600); do [ -e "$C/status.json" ] && break; sleep 0.05; done
expect_error "a sharing process refuses a folder a lone sweep works in" "started without --parallel-hosts" \
  "$NT" $(sweep_args "$C") --parallel-hosts
kill $lone
wait $lone 2>/dev/null
"$NT" $(sweep_args "$C") --parallel-hosts >"$TMP/c2.out" 2>&1 &
shared=$!
# Waits for this process's own run in status.json: the killed lone sweep's status may still say
# running, and a lone sweep started before the sharing one holds its lock would win the folder.
for _ in $(seq 1 600); do
  $PY - "$C/status.json" "$shared" 2>/dev/null <<'PY' && break
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
sys.exit(0 if any(r.get("worker", "").startswith(sys.argv[2] + " ") for r in runs) else 1)
PY
  sleep 0.05
done
check "the sharing process is working in the folder" "kill -0 $shared"
expect_error "a lone sweep refuses a folder sharing processes work in" "in use by another nanotrain sweep" \
  "$NT" $(sweep_args "$C")
expect_error "a sharing process with another plan is refused" "holds a different sweep" \
  "$NT" sweep --out "$C" --grid 'lr-matrix=0.03' --data "$TMP/data" --preset tiny --steps 20 --threads 1 \
  --parallel-hosts
kill $shared
wait $shared 2>/dev/null

# The ranks of an mpirun launch share the runs the same way (each rank trains alone), with or
# without MPI in the build.
MPIRUN=(mpirun --oversubscribe --bind-to none -np 2)
if command -v mpirun >/dev/null && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "${MPIRUN[@]}" true \
  >/dev/null 2>&1; then
  M="$TMP/m"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "${MPIRUN[@]}" "$NT" $(sweep_args "$M") \
    >"$TMP/m.out" 2>&1
  rc=$?
  check "two mpirun ranks run the sweep (exit $rc)" "[ $rc -eq 0 ]"
  check "every run trained once by the ranks, steps 1..$STEPS logged once each" "each_run_once '$M'"
  check "each run finished in one rank, both ranks trained" \
    "finished_once '$M' '$TMP/m.out' && [ \"\$(json '$M/status.json' 'len(set(r[\"worker\"] for r in d[\"runs\"]))')\" = 2 ]"
else
  skip "sweeps under mpirun (mpirun cannot start 2 processes here)"
fi
finish
