#!/usr/bin/env bash
# The planner end to end: `plan --fit` over real (tiny) runs writes a coefficients file and
# refuses too few or degenerate runs; `plan` times candidate shapes and prints a table or JSON of
# the documented schema; `--check` trains the choice and the next candidate as a sweep; bad input
# (a bad --budget or --shapes, a budget too short for any shape, `train --preset auto` without
# --time-budget or with a shape flag) is one line naming the flag.
# usage: plan_test.sh NANOTRAIN WORK_DIR
set -u
NT=$1 TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
PY=/usr/bin/python3
json() { $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

"$NT" data prepare --input /usr/share/common-licenses --out "$TMP/data" >/dev/null
# Five runs of different sizes and lengths: enough for the law's five coefficients.
"$NT" sweep --out "$TMP/fit" --data "$TMP/data" --preset tiny --head-dim 32 --eval-tokens 2048 --sample-tokens 0 \
  --threads 1 --quiet --variant a:'--d-model 64 --steps 20' --variant b:'--d-model 96 --steps 40' \
  --variant c:'--d-model 128 --steps 80' --variant d:'--d-model 64 --steps 80' \
  --variant e:'--d-model 128 --steps 20' >/dev/null 2>&1
check "the fit's five runs finished" "[ \$(ls '$TMP/fit'/*/summary.json | wc -l) -eq 5 ]"

"$NT" plan --fit "$TMP/fit" --out "$TMP/law.json" >"$TMP/fit.out" 2>&1
check "plan --fit writes the coefficients file" "[ \$? -eq 0 ] && grep -q 'written: $TMP/law.json' '$TMP/fit.out'"
check "the coefficients file: schema, the law, the five runs with predictions" \
  "[ \"\$(json '$TMP/law.json' 'd[\"schema\"], len(d[\"runs\"]), all(k in d for k in (\"E\", \"A\", \"alpha\", \"B\", \"beta\", \"rmse\", \"date\")), all(\"predicted\" in r for r in d[\"runs\"])')\" = \"('nanotrain-scaling-law/1', 5, True, True)\" ]"
check "the coefficients file: the repetition term and the data's size, per run and in all" \
  "[ \"\$(json '$TMP/law.json' 'd[\"C\"] >= 0, {r[\"unique_tokens\"] for r in d[\"runs\"]} == {d[\"data_train_tokens\"]} == {json.load(open(\"$TMP/data/data.json\"))[\"train_tokens\"]}')\" = \"(True, True)\" ]"
# A coefficients file's runs are fit points too, and a run both listed and given as a folder counts once.
"$NT" plan --fit "$TMP/law.json" --out "$TMP/law2.json" >/dev/null 2>&1
"$NT" plan --fit "$TMP/law.json" "$TMP/fit" --out "$TMP/law3.json" >"$TMP/fit3.out" 2>&1
check "a refit from the coefficients file's own runs gives the same law" \
  "[ \"\$(json '$TMP/law2.json' '[round(d[k], 9) for k in (\"E\", \"A\", \"alpha\", \"B\", \"beta\", \"C\")]')\" = \"\$(json '$TMP/law.json' '[round(d[k], 9) for k in (\"E\", \"A\", \"alpha\", \"B\", \"beta\", \"C\")]')\" ]"
check "runs both in the file and given as folders count once" \
  "[ \$(json '$TMP/law3.json' 'len(d[\"runs\"])') -eq 5 ] && [ \$(grep -c 'counted once' '$TMP/fit3.out') -eq 5 ]"
echo '{"schema": "nanotrain-scaling-law/1", "E": 1, "A": 1, "alpha": 0.5, "B": 1, "beta": 0.5, "runs": [{"name": "x"}]}' >"$TMP/badlaw.json"
expect_error "--fit of a coefficients file with a malformed run names the file and the key" \
  "$TMP/badlaw.json: runs\[0\].params must be a number" "$NT" plan --fit "$TMP/badlaw.json" --out "$TMP/x.json"
mkdir -p "$TMP/few" && cp -r "$TMP/fit"/00[1-4]_* "$TMP/few/"
expect_error "--fit over 4 runs is refused" "at least 5 finished runs .*got 4" "$NT" plan --fit "$TMP/few" --out "$TMP/x.json"
mkdir -p "$TMP/same" && for i in 1 2 3 4 5; do cp -r "$TMP/fit"/001_* "$TMP/same/r$i"; done
expect_error "--fit over runs of one size is refused" "parameter counts are too alike" \
  "$NT" plan --fit "$TMP/same" --out "$TMP/x.json"
check "a refused fit writes nothing" "[ ! -e '$TMP/x.json' ]"
expect_error "--fit of a missing folder names it" "$TMP/missing" "$NT" plan --fit "$TMP/missing"

# The plan, over two small shapes (three batches each).
PLAN=(plan --data "$TMP/data" --shapes 2x128,3x192 --threads 1 --coefficients "$TMP/law.json")
"$NT" "${PLAN[@]}" --min-steps 5 --budget 1m >"$TMP/plan.out" 2>"$TMP/plan.err"
check "plan prints a table of 6 candidates, the choice and the train command" \
  "[ \$? -eq 0 ] && [ \$(grep -cE '^ +[23] +(128|192) +(8|16|32) ' '$TMP/plan.out') -eq 6 ] && grep -q '<- chosen' '$TMP/plan.out' && grep -q '^train it with: nanotrain train --preset=cpu --depth=' '$TMP/plan.out'"
check "plan shows a progress line per shape timed" "[ \$(grep -c '^plan: timing' '$TMP/plan.err') -eq 2 ]"
"$NT" "${PLAN[@]}" --min-steps 5 --budget 1m --json --quiet >"$TMP/plan.json" 2>"$TMP/plan.err"
check "plan --json: the documented keys" "$PY - '$TMP/plan.json' '$TMP/data/data.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {'schema', 'budget_seconds', 'min_steps', 'machine', 'kernels', 'dtype', 'threads',
                  'data_train_tokens', 'measure_seconds', 'core_share', 'machine_was_busy', 'law', 'candidates',
                  'choice'}, sorted(d)
assert d['schema'] == 'nanotrain-plan/1' and d['budget_seconds'] == 60 and d['min_steps'] == 5
assert set(d['law']) == {'E', 'A', 'alpha', 'B', 'beta', 'C', 'source'}
assert d['data_train_tokens'] == json.load(open(sys.argv[2]))['train_tokens']
keys = {'depth', 'd_model', 'head_dim', 'seq_len', 'batch_size', 'params', 'params_matmul', 'memory_bytes',
        'step_seconds', 'tokens_per_second', 'steps', 'tokens', 'epochs', 'predicted_val_bpb', 'excluded', 'chosen'}
assert all(abs(c['epochs'] - c['tokens'] / d['data_train_tokens']) < 1e-9 for c in d['candidates'] if c['steps'])
assert len(d['candidates']) == 6 and all(set(c) == keys for c in d['candidates'])
assert sum(c['chosen'] for c in d['candidates']) == 1
assert set(d['choice']) == {'depth', 'd_model', 'head_dim', 'batch_size', 'params', 'steps', 'tokens', 'epochs',
                            'predicted_val_bpb', 'train_args', 'why'}
best = min((c for c in d['candidates'] if c['excluded'] is None), key=lambda c: c['predicted_val_bpb'])
assert best['chosen'] and best['depth'] == d['choice']['depth'] and best['batch_size'] == d['choice']['batch_size']
PY"
check "plan --json --quiet prints nothing on stderr" "[ ! -s '$TMP/plan.err' ]"

# Timed on a core a busy program shares, the plan says the machine was busy.
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
  taskset -c 0 sh -c 'while :; do :; done' &
  hog=$!
  taskset -c 0 "$NT" "${PLAN[@]}" --min-steps 5 --budget 1m >"$TMP/busy.out" 2>&1
  kill $hog
  wait $hog 2>/dev/null
  check "a plan timed beside a busy program warns that the machine was busy" \
    "grep -q '^warning: the machine was busy: the 1 thread had [1-6][0-9]% of its core ' '$TMP/busy.out'" ||
    cat "$TMP/busy.out"
else
  skip "a plan timed beside a busy program warns (no taskset)"
fi

# --check: the choice and the next candidate, trained as a sweep.
"$NT" "${PLAN[@]}" --budget 10s --min-steps 2 --check-budget 2s --json --quiet --check --check-runs 2 --check-out "$TMP/check" >"$TMP/check.json" 2>&1
rc=$?
check "plan --check runs and gives a verdict (exit 0 or 4, got $rc)" "[ $rc -eq 0 ] || [ $rc -eq 4 ]"
check "plan --check: two finished runs, the choice first, a gap and a verdict" \
  "[ \"\$(json '$TMP/check.json' '[r[\"state\"] for r in d[\"check\"][\"runs\"]], d[\"check\"][\"gap\"] is not None, d[\"check\"][\"within_tolerance\"] == ($rc == 0)')\" = \"(['done', 'done'], True, True)\" ] && [ \$(ls '$TMP/check'/*/summary.json | wc -l) -eq 2 ]"
check "the check's first run is the choice's shape and batch" "$PY - '$TMP/check.json' '$TMP/check/sweep.json' <<'PY'
import json, sys
d, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
first = plan['runs'][0]['config']
assert first['shape']['depth'] == d['choice']['depth'] and first['batch_size'] == d['choice']['batch_size'], first
PY"

# Bad input.
expect_error "a bad --budget names it" "--budget 5x: expected a positive duration" "$NT" "${PLAN[@]}" --budget 5x
expect_error "plan without --budget names it" "--budget: required" "$NT" plan --data "$TMP/data"
expect_error "a bad --shapes names it" "--shapes 4x250" "$NT" plan --budget 1m --shapes 4x250 --data "$TMP/data"
expect_error "a budget too short for every shape is an error naming --budget" "--budget 1.0s: too short" \
  "$NT" plan --budget 1s --data "$TMP/data" --shapes 2x128 --min-steps 100000 --threads 1 --quiet
expect_error "a broken coefficients file names it" "$TMP/law-bad.json" \
  bash -c "echo '{}' >'$TMP/law-bad.json' && '$NT' plan --budget 1m --data '$TMP/data' --coefficients '$TMP/law-bad.json'"
expect_error "train --preset auto without --time-budget names the flag" "--preset auto: needs --time-budget" \
  "$NT" train --preset auto --data "$TMP/data" --run-dir "$TMP/auto1"
expect_error "train --preset auto with --steps is refused" "--preset auto: needs --time-budget" \
  "$NT" train --preset auto --time-budget 1m --steps 5 --data "$TMP/data" --run-dir "$TMP/auto2"
expect_error "train --preset auto with --depth names --depth" "--depth: cannot be combined with --preset auto" \
  "$NT" train --preset auto --time-budget 1m --depth 3 --data "$TMP/data" --run-dir "$TMP/auto3"
expect_error "train --preset auto with a budget too short names --time-budget" "--time-budget 1.0s: too short" \
  "$NT" train --preset auto --time-budget 1s --data "$TMP/data" --threads 1 --quiet --run-dir "$TMP/auto4"
check "refused auto runs wrote nothing" "[ ! -e '$TMP/auto1' ] && [ ! -e '$TMP/auto2' ] && [ ! -e '$TMP/auto3' ] && [ ! -e '$TMP/auto4' ]"
"$NT" train --help >"$TMP/help.out"
check "train --help lists --preset auto" "grep -q 'auto (the planner' '$TMP/help.out'"
finish
