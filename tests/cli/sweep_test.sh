#!/usr/bin/env bash
# Sweeps, the leaderboard and the charts end to end: a sweep killed with SIGKILL in its second run
# and started again skips the finished run, resumes the interrupted one from its checkpoint and
# runs the rest; a failing run is recorded and the sweep goes on (exit 3); `runs --json` and
# `plot` over the result (every SVG parsed as XML); bad input refused before anything runs;
# runs with --preset auto planned when they start.
# usage: sweep_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
PY=/usr/bin/python3

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
SW="$TMP/sweep"
SWEEP=(sweep --out "$SW" --grid 'lr-matrix=0.01,0.02,0.04' --data "$TMP/data" --preset tiny --steps 150
       --save-every 10 --eval-every 50 --eval-tokens 2048 --sample-tokens 0 --threads 1)
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# The plan, without running anything.
"$NT" "${SWEEP[@]}" --dry-run --json >"$TMP/plan.json"
check "--dry-run plans 3 runs with parameters and memory" \
  "[ \"\$(json '$TMP/plan.json' 'len(d[\"runs\"]), d[\"runs\"][0][\"params\"] > 0, d[\"runs\"][0][\"memory_bytes\"] > 0')\" = '(3, True, True)' ] && [ ! -e '$SW' ]"

# Killed (SIGKILL) once the second run has a checkpoint.
"$NT" "${SWEEP[@]}" >"$TMP/first.out" 2>&1 &
pid=$!
second="$SW/002_lr-matrix=0.02"
for _ in $(seq 1 1200); do
  ls "$second/checkpoints"/step-*.safetensors >/dev/null 2>&1 && break
  sleep 0.05
done
"$NT" runs "$SW" --per-run --json >"$TMP/live.json"
kill -9 $pid
wait $pid 2>/dev/null
check "runs, while the sweep trains, shows the second run running" \
  "[ \"\$(json '$TMP/live.json' 'sorted(r[\"state\"] for r in d[\"runs\"])')\" = \"['done', 'running']\" ]"
check "the first run finished before the kill" "[ -e '$SW/001_lr-matrix=0.01/summary.json' ]"
check "the second run was interrupted (a checkpoint, no summary)" \
  "ls '$second/checkpoints'/step-*.safetensors >/dev/null 2>&1 && [ ! -e '$second/summary.json' ]"
check "status.json shows the second run running" "[ \"\$(json '$SW/status.json' 'd[\"runs\"][1][\"state\"]')\" = running ]"
first_sum=$(sha256sum "$SW/001_lr-matrix=0.01/summary.json")

# Started again: skipped, resumed, new.
"$NT" "${SWEEP[@]}" >"$TMP/second.out" 2>&1
rc=$?
check "the restarted sweep finishes (exit $rc)" "[ $rc -eq 0 ]"
check "the finished run was skipped, untouched" \
  "grep -q '001_lr-matrix=0.01: already done' '$TMP/second.out' && [ \"\$(sha256sum '$SW/001_lr-matrix=0.01/summary.json')\" = '$first_sum' ]"
check "the interrupted run was resumed" "grep -q '002_lr-matrix=0.02: resumed' '$TMP/second.out'"
check "status.json: all done, how each started" \
  "[ \"\$(json '$SW/status.json' 'd[\"state\"], d[\"counts\"][\"done\"], [r[\"how\"] for r in d[\"runs\"]]')\" = \"('done', 3, ['skipped', 'resumed', 'new'])\" ]"
check "the resumed run logged each step once, 1 to 150" "$PY - '$second/metrics.jsonl' <<'PY'
import json, sys
steps = [r['step'] for r in map(json.loads, open(sys.argv[1])) if r.get('type') == 'step']
assert steps == list(range(1, 151)), steps[:5]
PY"
check "every run has its summary" "[ \$(ls '$SW'/*/summary.json | wc -l) -eq 3 ]"
check "one peak measurement for the sweep, given to every run" \
  "grep -q 'measured once for the sweep' '$SW/status.json' && grep -q '\"peak_source\": \"--peak-gflops\"' '$SW/003_lr-matrix=0.04/summary.json'"

# Continued with --out alone: everything is done already.
"$NT" sweep --out "$SW" --json >"$TMP/again.json" 2>"$TMP/again.err"
check "--out alone continues the stored plan (nothing left to run)" \
  "[ \$? -eq 0 ] && [ \"\$(json '$TMP/again.json' '[r[\"how\"] for r in d[\"runs\"]]')\" = \"['skipped', 'skipped', 'skipped']\" ]"
"$NT" sweep --out "$SW" --grid 'depth=1,2' --data "$TMP/data" --preset tiny --steps 2 >/dev/null 2>"$TMP/diff.err"
check "another plan in the same folder is refused" "[ \$? -eq 1 ] && grep -q 'sweep.json: holds a different sweep' '$TMP/diff.err'"

# A run that fails is recorded; the others run; exit 3.
"$NT" sweep --out "$TMP/failing" --variant ok: --variant bad:'--vocab-size 10' --data "$TMP/data" --preset tiny \
  --steps 2 --sample-tokens 0 --eval-tokens 1024 --json >"$TMP/failing.json" 2>/dev/null
rc=$?
check "a failed run gives exit 3 (got $rc)" "[ $rc -eq 3 ]"
check "status.json names the failure, the other run done" \
  "[ \"\$(json '$TMP/failing.json' '[r[\"state\"] for r in d[\"runs\"]], \"vocab-size\" in d[\"runs\"][1][\"error\"]')\" = \"(['done', 'failed'], True)\" ]"

# The leaderboard.
mkdir -p "$TMP/all/broken" && echo '{' >"$TMP/all/broken/config.json"
cp -r "$SW" "$TMP/all/"
"$NT" runs "$SW" --json >"$TMP/runs.json"
check "runs --json: 3 done runs sorted by val_bpb, lr-matrix differs" \
  "[ \"\$(json '$TMP/runs.json' 'd[\"schema\"], len(d[\"runs\"]), all(r[\"state\"] == \"done\" for r in d[\"runs\"]), d[\"differing\"], sorted(r[\"val_bpb\"] for r in d[\"runs\"]) == [r[\"val_bpb\"] for r in d[\"runs\"]]')\" = \"('nanotrain-runs/1', 3, True, ['lr-matrix'], True)\" ]"
"$NT" runs "$TMP/all" >"$TMP/runs.txt"
check "a broken folder is listed with its state" "grep -q '^.*broken *broken' '$TMP/runs.txt' && [ \$(wc -l <'$TMP/runs.txt') -eq 5 ]"
"$NT" runs "$SW" --where lr-matrix=0.02 --markdown >"$TMP/runs.md"
check "--where and --markdown" "[ \$(grep -c '^| ' '$TMP/runs.md') -eq 3 ] && grep -q '002_lr-matrix=0.02' '$TMP/runs.md'"

# The charts and the report.
"$NT" plot "$SW" "$TMP/failing" --out "$TMP/plots" --json >"$TMP/plot.json"
check "plot writes six charts and report.html" "[ \$? -eq 0 ] && [ \$(ls '$TMP/plots'/*.svg | wc -l) -eq 6 ] && [ -s '$TMP/plots/report.html' ]"
check "every SVG is well-formed XML with a legend row per series" "$PY - '$TMP/plots' <<'PY'
import glob, sys, xml.etree.ElementTree as ET
for f in glob.glob(sys.argv[1] + '/*.svg'):
    root = ET.parse(f).getroot()
    assert root.tag.endswith('svg'), f
    texts = [t.text or '' for t in root.iter('{http://www.w3.org/2000/svg}text')]
    assert any('lr-matrix=0.04' in t for t in texts), f
PY"
check "report.html holds the charts inline and fetches nothing" \
  "[ \$(grep -c '<svg' '$TMP/plots/report.html') -eq 6 ] && ! grep -q -E ' (src|href)=' '$TMP/plots/report.html'"

# Bad input: one line naming the flag, nothing written.
"$NT" sweep --out "$TMP/bad" --grid 'depth' --data "$TMP/data" >/dev/null 2>"$TMP/bad.err"
check "a bad --grid is refused (exit 1), nothing written" "[ \$? -eq 1 ] && grep -q -- '--grid depth' '$TMP/bad.err' && [ ! -e '$TMP/bad' ]"
"$NT" sweep --out "$TMP/bad" --grid 'depth=x' --data "$TMP/data" >/dev/null 2>"$TMP/bad2.err"
check "a bad value in the grid names the run and the flag" "[ \$? -eq 1 ] && grep -q -- 'run 001_depth=x.*--depth' '$TMP/bad2.err'"
"$NT" sweep --grid 'depth=1' >/dev/null 2>&1
check "sweep without --out is a usage error (exit 2)" "[ \$? -eq 2 ]"
"$NT" sweep --out "$TMP/bad" --variant x:'--resume somewhere' >/dev/null 2>"$TMP/bad3.err"
check "a variant may not set --resume" "[ \$? -eq 1 ] && grep -q -- '--resume' '$TMP/bad3.err'"
"$NT" runs "$SW" --where depth >/dev/null 2>"$TMP/bad4.err"
check "a bad --where is refused (exit 1)" "[ \$? -eq 1 ] && grep -q -- '--where' '$TMP/bad4.err'"
"$NT" runs "$TMP/missing" >/dev/null 2>&1
check "runs of a missing folder is an error (exit 1)" "[ \$? -eq 1 ]"

# --preset auto in a sweep: refused where train refuses it, planned when each run starts (once for
# runs of the same budget), and the run's config.json holds the planner's shape. One thread: two
# threads timed beside other tests' busy cores wait on each other, and the planner's timings with
# them (a busy machine can leave no shape 300 steps in the budget).
AUTO=(sweep --grid 'preset=auto' --data "$TMP/data" --eval-tokens 2048 --sample-tokens 0 --threads 1)
"$NT" "${AUTO[@]}" --out "$TMP/bad" --steps 10 >/dev/null 2>"$TMP/auto1.err"
check "preset=auto with --steps is refused naming the run" \
  "[ \$? -eq 1 ] && grep -q -- 'run 001_preset=auto: --preset auto: needs --time-budget' '$TMP/auto1.err' && [ ! -e '$TMP/bad' ]"
"$NT" sweep --grid 'preset=auto depth=2' --data "$TMP/data" --out "$TMP/bad" --time-budget 1m >/dev/null 2>"$TMP/auto2.err"
check "preset=auto with a depth is refused naming --depth" \
  "[ \$? -eq 1 ] && grep -q -- '--depth: cannot be combined with --preset auto' '$TMP/auto2.err'"
"$NT" "${AUTO[@]}" --out "$TMP/auto" --time-budget 45s --seeds 2 --dry-run >"$TMP/auto_plan.out"
check "--dry-run says the planner chooses when the run starts" \
  "[ \$(grep -c 'chosen by the planner when the run starts' '$TMP/auto_plan.out') -eq 2 ]"
"$NT" "${AUTO[@]}" --out "$TMP/auto" --time-budget 45s --seeds 2 >"$TMP/auto.out" 2>"$TMP/auto.err"
check "an auto sweep of 2 seeds finishes, planned once" \
  "[ \$? -eq 0 ] && [ \$(grep -c 'timing the planner' '$TMP/auto.err') -eq 1 ] && [ \$(grep -c 'preset auto chose depth' '$TMP/auto.err') -eq 2 ]" ||
  cat "$TMP/auto.err"
check "each run's config.json holds the chosen shape, the sweep's plan still auto" \
  "$PY -c \"
import json, glob
cfgs = [json.load(open(f)) for f in sorted(glob.glob('$TMP/auto/*/config.json'))]
assert len(cfgs) == 2 and all(c['preset'] != 'auto' and c['model']['depth'] > 0 for c in cfgs), cfgs
assert cfgs[0]['model'] == cfgs[1]['model'] and cfgs[0]['batch_size'] == cfgs[1]['batch_size']
assert all(r['config']['shape']['preset'] == 'auto' for r in json.load(open('$TMP/auto/sweep.json'))['runs'])
\""
finish
