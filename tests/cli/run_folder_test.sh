#!/usr/bin/env bash
# A run folder belongs to one run: a new run refuses a folder that holds a run (or anything
# else), --overwrite starts over, one process at a time writes a folder (a second one is refused
# naming the holder; a dead holder's lock is taken over), a checkpoint of another run is never
# resumed, and a symlinked metrics file is not followed. Twenty races of two runs started 0.2 s
# apart into one new folder: exactly one succeeds each time.
# usage: run_folder_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
sum() { sha256sum "$@" | cut -c1-64 | tr '\n' ' '; }

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
RUN=(--data "$TMP/data" --preset tiny --sample-tokens 0 --quiet)

# A finished run is never replaced by a new one.
"$NT" train "${RUN[@]}" --steps 6 --save-every 3 --run-dir "$TMP/a" >/dev/null 2>&1
before=$(sum "$TMP/a/summary.json" "$TMP/a/model.safetensors" "$TMP/a/metrics.jsonl")
"$NT" train "${RUN[@]}" --steps 4 --run-dir "$TMP/a" >/dev/null 2>"$TMP/a.err"
rc=$?
check "a new run into a finished run's folder is refused (exit $rc)" "[ $rc -ne 0 ]"
check "the refusal is one line naming --resume and --overwrite" \
  "[ \$(wc -l <'$TMP/a.err') -eq 1 ] && grep -q -- '--resume $TMP/a' '$TMP/a.err' && grep -q -- '--overwrite' '$TMP/a.err'"
check "the finished run is untouched" "[ \"\$(sum '$TMP/a/summary.json' '$TMP/a/model.safetensors' '$TMP/a/metrics.jsonl')\" = '$before' ]"

# A folder that is not a run's is refused, with --overwrite too, and left as it was.
data_sum() { (cd "$1" && find . -type f | sort | xargs sum); }
data_before=$(data_sum "$TMP/data")
for extra in "" --overwrite; do
  "$NT" train "${RUN[@]}" --steps 2 --run-dir "$TMP/data" $extra >/dev/null 2>"$TMP/d.err"
  rc=$?
  check "a data folder as run folder ${extra:-(plain)} is refused (exit $rc)" "[ $rc -ne 0 ] && grep -q 'not empty' '$TMP/d.err'"
done
check "the data folder is untouched" "[ \"\$(data_sum '$TMP/data')\" = '$data_before' ] && [ ! -e '$TMP/data/.lock' ]"

# --overwrite starts over: the old run's files, checkpoints included, are gone.
old_id=$(grep -o '"run_id": "[0-9a-f]*"' "$TMP/a/config.json")
"$NT" train "${RUN[@]}" --steps 2 --save-every 0 --run-dir "$TMP/a" --overwrite >/dev/null 2>&1
check "--overwrite ran the new run" "grep -q '\"steps\": 2' '$TMP/a/summary.json'"
check "--overwrite removed the old checkpoints" "[ \$(ls '$TMP/a/checkpoints' | wc -l) -eq 1 ] && [ -e '$TMP/a/checkpoints/step-00000002.safetensors' ]"
check "the new run has a new id" "! grep -q '$old_id' '$TMP/a/config.json'"
"$NT" train --resume "$TMP/a" --overwrite >/dev/null 2>"$TMP/o.err"
check "--overwrite with --resume is refused" "[ \$? -ne 0 ] && grep -q -- '--overwrite' '$TMP/o.err'"

# A checkpoint of another run is not resumed.
"$NT" train "${RUN[@]}" --steps 9 --save-every 3 --run-dir "$TMP/b" >/dev/null 2>&1
"$NT" train "${RUN[@]}" --steps 6 --save-every 3 --run-dir "$TMP/c" >/dev/null 2>&1
cp "$TMP/b/checkpoints/step-00000009.safetensors" "$TMP/c/checkpoints/"
"$NT" train --resume "$TMP/c" --quiet >/dev/null 2>"$TMP/c.err"
rc=$?
check "resume refuses another run's checkpoint (exit $rc)" "[ $rc -ne 0 ] && grep -q 'written by run' '$TMP/c.err'"

# A symlinked metrics.jsonl is not followed into somebody else's file.
echo precious >"$TMP/victim"
rm "$TMP/c/checkpoints/step-00000009.safetensors"
mv "$TMP/c/metrics.jsonl" "$TMP/c/metrics.real"
ln -s "$TMP/victim" "$TMP/c/metrics.jsonl"
"$NT" train --resume "$TMP/c" --quiet >/dev/null 2>"$TMP/l.err"
check "a symlinked metrics.jsonl is refused" "[ \$? -ne 0 ] && grep -q 'symbolic link' '$TMP/l.err' && [ \"\$(cat '$TMP/victim')\" = precious ]"

# The lock: a second writer is refused naming the holder; a dead holder's lock is taken over.
"$NT" train "${RUN[@]}" --steps 100000 --save-every 2 --run-dir "$TMP/l" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do ls "$TMP/l/checkpoints"/step-*.safetensors >/dev/null 2>&1 && break; sleep 0.1; done
"$NT" train --resume "$TMP/l" --quiet >/dev/null 2>"$TMP/l2.err"
check "a second writer is refused naming the holder's pid" "[ \$? -ne 0 ] && grep -q 'in use by another nanotrain process (pid $pid)' '$TMP/l2.err'"
"$NT" train "${RUN[@]}" --steps 2 --run-dir "$TMP/l" --overwrite >/dev/null 2>"$TMP/l3.err"
check "--overwrite of a folder in use is refused" "[ \$? -ne 0 ] && grep -q 'in use' '$TMP/l3.err'"
kill -9 $pid
wait $pid 2>/dev/null
timeout 60 "$NT" train --resume "$TMP/l" --quiet >/dev/null 2>"$TMP/l4.err" &
pid2=$!
for _ in $(seq 1 600); do grep -q "\"step\"" "$TMP/l/metrics.jsonl" 2>/dev/null && sleep 1 && break; sleep 0.1; done
kill -TERM $pid2 2>/dev/null
wait $pid2
rc=$?
check "the dead holder's lock was taken over (resumed run stopped by SIGTERM: $rc)" "[ $rc -eq 143 ]"

# A run that fails before writing anything leaves no folder behind.
"$NT" train --data "$TMP/missing" --preset tiny --run-dir "$TMP/never" >/dev/null 2>&1
check "a failed start leaves no folder" "[ ! -e '$TMP/never' ]"

# Twenty races: two runs into one new folder, 0.2 s apart.
both=0 none=0
for race in $(seq 1 20); do
  R="$TMP/race$race"
  "$NT" train "${RUN[@]}" --steps 3 --save-every 0 --run-dir "$R" >/dev/null 2>"$R.1.err" &
  p1=$!
  sleep 0.2
  "$NT" train "${RUN[@]}" --steps 3 --save-every 0 --run-dir "$R" >/dev/null 2>"$R.2.err" &
  p2=$!
  wait $p1; r1=$?
  wait $p2; r2=$?
  wins=$(( (r1 == 0) + (r2 == 0) ))
  [ $wins -eq 2 ] && both=$((both + 1))
  [ $wins -eq 0 ] && none=$((none + 1))
  [ -s "$R/summary.json" ] || none=$((none + 1))
done
check "20 races: never both succeeded ($both times)" "[ $both -eq 0 ]"
check "20 races: one run finished every time ($none failures)" "[ $none -eq 0 ]"
finish
