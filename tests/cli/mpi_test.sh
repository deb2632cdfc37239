#!/usr/bin/env bash
# Training over several processes (mpirun) equals training in one: 20 fp32 steps in 1 process,
# in 2 ranks and in 3 ranks give the same losses (within 1e-6 relative); a run resumed at another
# rank count (2 -> 1, 1 -> 2, 2 -> 3, 3 -> 2) continues as the uninterrupted run did. Each rank
# holds about 1/N of the optimizer state, the summary reports each rank's throughput and
# communication, and the divided evaluation gives one process's val_bpb bit for bit.
# A rank killed mid-run ends the whole job quickly with a non-zero exit, and the run resumes from
# its last checkpoint; SIGTERM stops every rank at one step; bench times the steps over 2 ranks
# with each rank's figures. Skipped (77) where mpirun cannot
# start two processes.
# usage: mpi_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh"

command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }
# OpenMPI refuses root unless told, and by default refuses more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
"${MPIRUN[@]}" -np 2 true >/dev/null 2>&1 || { echo "skip: mpirun cannot start 2 processes here"; exit 77; }

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
# 6 micro-batches of 2 x 64 tokens a step: they divide among 1, 2 and 3 ranks, not among 4.
BASE=(--data "$TMP/data" --preset tiny --dtype fp32 --threads 1 --batch-size 2 --total-batch-tokens 768
      --sample-tokens 0 --keep-checkpoints 5)
RUN=("${BASE[@]}" --steps 20 --save-every 10)

# The N-rank run's summary against the 1-process run's: each rank's optimizer state within one
# tensor (the ownership's granularity: the largest tensor's m and v) of the whole over N, the
# ranks' together the whole; each rank's tokens, tokens/s and communication time; the step
# lines' communication figures; MFU over the job's summed peak. Prints the ranks' state bytes.
rank_figures() { python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
one, run, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s1 = json.load(open(one + "/summary.json")); s = json.load(open(run + "/summary.json"))
f = open(run + "/model.safetensors", "rb"); h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
largest = max(2 * 4 * (-(-x["shape"][0] * (x["shape"][1] if len(x["shape"]) > 1 else 1) // 16) * 16)
              for k, x in h.items() if k != "__metadata__")
whole = s1["optimizer_state_bytes"]; ranks = s["ranks"]; per = [r["optimizer_state_bytes"] for r in ranks]
print(per, "of", whole, end=" ")
ok = len(ranks) == n and len(s1["ranks"]) == 1 and s1["ranks"][0]["comm_seconds"] == 0
ok &= sum(per) == whole and s["optimizer_state_bytes"] == whole and max(per) <= whole / n + largest
ok &= all(r["tokens"] * n == s["tokens_trained"] and r["tokens_per_second"] > 0 and r["comm_seconds"] > 0
          and 0 < r["comm_share"] < 1 and r["compute_seconds"] < r["train_seconds"] for r in ranks)
steps = [json.loads(l) for l in open(run + "/metrics.jsonl") if '"step"' in l and json.loads(l)["type"] == "step"]
ok &= all(x["comm_seconds"] > 0 and len(x["rank_compute_seconds"]) == n for x in steps)
# MFU against the whole job's peak (every rank's summed), as tokens/s counts every rank's tokens.
ok &= f"the sum over {n} ranks" in s["peak_source"] and "ranks" not in s1["peak_source"]
sys.exit(0 if ok else 1)
PY
}
# The val_bpb of a run's summary, exactly as written.
bpb() { python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1] + "/summary.json"))["val_bpb"]))' "$1"; }

"$NT" train "${RUN[@]}" --run-dir "$TMP/one" >/dev/null 2>&1
for np in 2 3; do
  "${MPIRUN[@]}" -np $np "$NT" train "${RUN[@]}" --run-dir "$TMP/np$np" >"$TMP/np$np.out" 2>&1
  rc=$?
  d=$(max_rel "$TMP/one" "$TMP/np$np")
  echo "1 process vs $np ranks: largest relative loss difference over 20 steps: $d"
  check "$np ranks train 20 steps (exit $rc)" "[ $rc -eq 0 ] && [ \$(losses '$TMP/np$np' | wc -l) -eq 20 ]"
  check "$np ranks give the 1-process losses within 1e-6 relative ($d)" "close '$d'"
  check "$np ranks write the same files as one process" \
    "[ \"\$(cd '$TMP/one' && find . -type f | sort)\" = \"\$(cd '$TMP/np$np' && find . -type f | sort)\" ]"
  check "$np ranks print one summary" "[ \$(grep -c '^val_bpb' '$TMP/np$np.out') -eq 1 ]"
  check "$np ranks show the communication share in the progress line" "grep -q '| comm [0-9]*%' '$TMP/np$np.out'"
  figures=$(rank_figures "$TMP/one" "$TMP/np$np" $np 2>&1)
  check "$np ranks: the summary's per-rank state, throughput and communication ($figures)" \
    "rank_figures '$TMP/one' '$TMP/np$np' $np >/dev/null"
done

# Resume at another world size from step 10: 2 ranks -> 1 process, 1 process -> 2 ranks.
cut_at_10() {
  cp -r "$1" "$2" && rm -f "$2/.lock" "$2/checkpoints/step-00000020.safetensors" "$2/summary.json" "$2/model.safetensors"
}
cut_at_10 "$TMP/np2" "$TMP/r21"
"$NT" train --resume "$TMP/r21" --threads 1 --quiet >/dev/null 2>&1
d=$(max_rel "$TMP/one" "$TMP/r21")
check "a 2-rank run resumed in 1 process continues as the 1-process run ($d)" "close '$d'"
cut_at_10 "$TMP/one" "$TMP/r12"
"${MPIRUN[@]}" -np 2 "$NT" train --resume "$TMP/r12" --threads 1 --quiet >/dev/null 2>&1
d=$(max_rel "$TMP/one" "$TMP/r12")
check "a 1-process run resumed over 2 ranks continues as it did ($d)" "close '$d'"
cut_at_10 "$TMP/np2" "$TMP/r23"
"${MPIRUN[@]}" -np 3 "$NT" train --resume "$TMP/r23" --threads 1 --quiet >/dev/null 2>&1
d=$(max_rel "$TMP/one" "$TMP/r23")
check "a 2-rank run resumed over 3 ranks continues as it did ($d)" "close '$d'"
cut_at_10 "$TMP/np3" "$TMP/r32"
"${MPIRUN[@]}" -np 2 "$NT" train --resume "$TMP/r32" --threads 1 --quiet >/dev/null 2>&1
d=$(max_rel "$TMP/one" "$TMP/r32")
check "a 3-rank run resumed over 2 ranks continues as it did ($d)" "close '$d'"

# The divided evaluation: the 1-process run's final weights (its last checkpoint, resumed with no
# step left) evaluated by 1, 2 and 3 ranks give its own val_bpb, bit for bit.
for np in 1 2 3; do
  cp -r "$TMP/one" "$TMP/ev$np" && rm -f "$TMP/ev$np/.lock" "$TMP/ev$np/summary.json"
  "${MPIRUN[@]}" -np $np "$NT" train --resume "$TMP/ev$np" --threads 1 --quiet >/dev/null 2>&1
  check "val_bpb evaluated by $np rank(s) is the 1-process value ($(bpb "$TMP/ev$np") vs $(bpb "$TMP/one"))" \
    "[ \"\$(bpb '$TMP/ev$np')\" = \"\$(bpb '$TMP/one')\" ] && tail -1 '$TMP/ev$np/metrics.jsonl' | grep -q '\"eval_ranks\":$np'"
done

# A batch that does not divide among the ranks is refused, naming the flag, and nothing hangs.
timeout 60 "${MPIRUN[@]}" -np 4 "$NT" train "${RUN[@]}" --run-dir "$TMP/np4" >"$TMP/np4.out" 2>&1
rc=$?
check "4 ranks for 6 micro-batches are refused (exit $rc)" \
  "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- '--total-batch-tokens 768: .* do not divide among 4 ranks' '$TMP/np4.out'"

# Rank 1 killed mid-run: the job ends within seconds, non-zero; the run resumes from a checkpoint.
"${MPIRUN[@]}" -np 2 "$NT" train "${BASE[@]}" --quiet --steps 200 --save-every 5 --run-dir "$TMP/kill" \
  >"$TMP/kill.out" 2>&1 &
job=$!
for _ in $(seq 600); do
  [ -e "$TMP/kill/checkpoints/step-00000005.safetensors" ] && break
  sleep 0.1
done
victim=""
for p in $(pgrep -f "nanotrain train .*$TMP/kill"); do
  grep -qz '^OMPI_COMM_WORLD_RANK=1$' "/proc/$p/environ" 2>/dev/null && victim=$p
done
start=$(date +%s.%N)
[ -n "$victim" ] && kill -9 "$victim"
( sleep 30 && kill -9 $job 2>/dev/null ) & guard=$!
wait $job
rc=$?
took=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
kill $guard 2>/dev/null
echo "rank 1 killed: the job ended in ${took} s with exit $rc"
check "rank 1 was found and killed mid-run" "[ -n '$victim' ] && [ ! -e '$TMP/kill/summary.json' ]"
check "the job ends within 10 s of the kill, non-zero (${took} s, exit $rc)" \
  "[ $rc -ne 0 ] && python3 -c 'import sys; sys.exit(0 if $took <= 10 else 1)'"
"$NT" train --resume "$TMP/kill" --threads 1 --quiet >"$TMP/resume.out" 2>&1
check "the killed run resumes from its last checkpoint and finishes" "grep -q '\"steps\": 200' '$TMP/kill/summary.json'"

# SIGTERM to mpirun reaches every rank; rank 0's decision stops them all at one step, whose
# checkpoint rank 0 writes.
"${MPIRUN[@]}" -np 2 "$NT" train "${BASE[@]}" --quiet --steps 5000 --save-every 0 --run-dir "$TMP/term" >"$TMP/term.out" 2>&1 &
job=$!
for _ in $(seq 300); do
  grep -q '"step"' "$TMP/term/metrics.jsonl" 2>/dev/null && break
  sleep 0.1
done
kill -TERM $job
( sleep 30 && kill -9 $job 2>/dev/null ) & guard=$!
wait $job
kill $guard 2>/dev/null
check "SIGTERM stops both ranks at one step with one checkpoint" \
  "grep -q 'stopped by SIGTERM at step' '$TMP/term.out' && [ \$(ls '$TMP/term/checkpoints' | wc -l) -eq 1 ]"

# bench over 2 ranks: the job's row (printed once), each rank's compute, optimizer and
# communication; the kernel table is refused (it is one process's).
"${MPIRUN[@]}" -np 2 "$NT" bench --no-kernels --configs cpu --dtype fp32 --steps 1 --threads 1 \
  --json "$TMP/bench.json" >"$TMP/bench.out" 2>&1
rc=$?
check "bench over 2 ranks: one table, a line per rank (exit $rc)" \
  "[ $rc -eq 0 ] && [ \$(grep -c '^  cpu ' '$TMP/bench.out') -eq 1 ] && [ \$(grep -c '    rank [01] ' '$TMP/bench.out') -eq 2 ]"
check "bench over 2 ranks: --json holds each rank's figures" "python3 - '$TMP/bench.json' <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))['steps'][0]
r = row['ranks']
assert [x['rank'] for x in r] == [0, 1] and all(x['host'] for x in r), r
assert all(x['forward_backward_ms'] > 0 and x['comm_ms'] > 0 and 0 < x['comm_share'] < 1 for x in r), r
# the sum after the backward: a wait for the slowest rank and a transfer, which add up to it
assert all(x['comm_wait_ms'] >= 0 and x['comm_transfer_ms'] > 0 and 0 < x['comm_transfer_share'] < 1 and
           x['comm_wait_ms'] <= x['comm_after_backward_ms'] for x in r), r
assert abs(sum(x['tokens_per_second'] for x in r) - row['tokens_per_second']) < 0.01 * row['tokens_per_second'], row
PY"
"${MPIRUN[@]}" -np 2 "$NT" bench --configs cpu --steps 1 --threads 1 >"$TMP/bench_k.out" 2>&1
rc=$?
check "bench over 2 ranks refuses the kernel table (exit $rc)" \
  "[ $rc -ne 0 ] && grep -q 'times whole training steps only: add --no-kernels' '$TMP/bench_k.out'"

finish
