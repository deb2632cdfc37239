#!/usr/bin/env bash
# CORE during training (`train --core-every --core-bundle --core-max-per-task`): the evaluations
# at their steps in metrics.jsonl, the final one in summary.json equal to `eval core` on the final
# weights, the loss chart's CORE panel, a resumed run's schedule, a bad bundle refused before
# training, and an evaluation that fails leaving the run's files whole.
# usage: core_train_test.sh NANOTRAIN SOURCE_DIR WORK_DIR
set -u
NT=$1 SRC=$2 TMP=$3
PY=/usr/bin/python3
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
pyjson() {  # pyjson 'PYTHON ASSERTIONS' (json and sys imported; T is the work folder)
  $PY -c "import json, sys; T = '$TMP'; $1"
}

TEXT=/usr/share/common-licenses
"$NT" data prepare --input "$TEXT" --out "$TMP/data" >/dev/null
$PY "$SRC/scripts/make_core_bundle.py" --input "$TEXT" --out "$TMP/bundle" --items 30 --max-words 12 >/dev/null
TRAIN=("$NT" train --data "$TMP/data" --preset tiny --seq-len 128 --quiet)
CORE=(--core-every 5 --core-bundle "$TMP/bundle" --core-max-per-task 20)

# --- refused before training
cp -r "$TMP/bundle" "$TMP/badbundle"
sed -i '3s/.*/{"query": "q", "choices": ["a", "b"], "gold": 7}/' "$TMP/badbundle/eval_data/multiple_choice/next_sentence.jsonl"
expect_error "a bad bundle fails before training, naming the file and line" \
  "--core-bundle: .*next_sentence.jsonl:3: .*gold" \
  "${TRAIN[@]}" --steps 20 --core-every 5 --core-bundle "$TMP/badbundle" --run-dir "$TMP/badrun"
check "... and leaves no run folder" "[ ! -e '$TMP/badrun' ]"
expect_error "--core-every without --core-bundle" "--core-every 5: needs --core-bundle" \
  "${TRAIN[@]}" --core-every 5 --run-dir "$TMP/badrun"
expect_error "--core-every with a bad interval" "--core-every 5x" \
  "${TRAIN[@]}" --core-every 5x --core-bundle "$TMP/bundle" --run-dir "$TMP/badrun"
expect_error "--core-max-per-task below 0" "--core-max-per-task" \
  "${TRAIN[@]}" --core-bundle "$TMP/bundle" --core-max-per-task -1 --run-dir "$TMP/badrun"

# --- CORE every 5 steps, and at the end
"${TRAIN[@]}" --steps 20 "${CORE[@]}" --save-every 10 --run-dir "$TMP/run" >"$TMP/train.out" 2>&1
check "training with CORE exits 0" "[ $? -eq 0 ] && [ -s '$TMP/run/model.safetensors' ]"
core_steps() { pyjson "print([json.loads(l)['step'] for l in open('$1') if json.loads(l)['type'] == 'core'])"; }
check "metrics.jsonl has CORE at steps 5, 10, 15 and 20 ($(core_steps "$TMP/run/metrics.jsonl"))" \
  "[ '$(core_steps "$TMP/run/metrics.jsonl")' = '[5, 10, 15, 20]' ]"
check "each CORE line has the per-task accuracy and centered accuracy" "pyjson '
for l in open(T + \"/run/metrics.jsonl\"):
    j = json.loads(l)
    if j[\"type\"] != \"core\": continue
    assert j[\"train_seconds\"] >= 0 and j[\"tasks\"] and -2 < j[\"core\"] <= 1, j
    assert all(set(t) == {\"accuracy\", \"centered\"} for t in j[\"tasks\"].values()), j
    assert abs(sum(t[\"centered\"] for t in j[\"tasks\"].values()) / len(j[\"tasks\"]) - j[\"core\"]) < 1e-12'"
check "the terminal shows CORE" "grep -q '^CORE ' '$TMP/train.out'"
check "config.json records the CORE settings" \
  "pyjson 'f = json.load(open(T + \"/run/config.json\"))[\"flags\"]; assert f[\"core_every\"] == \"5\" and f[\"core_max_per_task\"] == 20, f'"
"$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --max-per-task 20 --scorer fast \
  --json "$TMP/core.json" >/dev/null 2>&1
check "summary.json's CORE equals eval core's on the final weights" "pyjson '
s, e = json.load(open(T + \"/run/summary.json\")), json.load(open(T + \"/core.json\"))
assert abs(s[\"core\"] - e[\"core\"]) < 1e-9, (s[\"core\"], e[\"core\"])
assert s[\"core_seconds\"] > 0 and \"core_error\" not in s
for t in e[\"tasks\"]:
    assert abs(s[\"core_tasks\"][t[\"label\"]][\"accuracy\"] - t[\"accuracy\"]) < 1e-12, t[\"label\"]
last = [json.loads(l) for l in open(T + \"/run/metrics.jsonl\") if json.loads(l)[\"type\"] == \"core\"][-1]
assert last[\"core\"] == s[\"core\"] and last[\"tasks\"] == s[\"core_tasks\"]'"
check "the loss chart has a CORE panel with a point per evaluation" \
  "[ \$(grep -o 'class=\"core\"' '$TMP/run/loss.svg' | wc -l) -eq 4 ]"

# --- a resumed run keeps the schedule: no CORE twice at the checkpoint's step, none missed
rm -f "$TMP"/run/checkpoints/step-00000020.safetensors
"$NT" train --resume "$TMP/run" --quiet >"$TMP/resume.out" 2>&1
check "a run resumed from step 10 has CORE at steps 5, 10, 15 and 20 ($(core_steps "$TMP/run/metrics.jsonl"))" \
  "[ '$(core_steps "$TMP/run/metrics.jsonl")' = '[5, 10, 15, 20]' ]"

# --- an evaluation that fails (an item longer than the context) leaves the run whole
cp -r "$TMP/bundle" "$TMP/longbundle"
$PY - "$TMP/longbundle" <<'PYEOF'
import json, os, sys
with open(os.path.join(sys.argv[1], "eval_data", "too_long.jsonl"), "w") as f:
    for i in range(3):
        f.write(json.dumps({"context": "a b c", "continuation": "word " * 100}) + "\n")
with open(os.path.join(sys.argv[1], "core.yaml"), "a") as f:
    f.write("- label: too_long\n  dataset_uri: too_long.jsonl\n  num_fewshot: [0]\n  icl_task_type: language_modeling\n")
with open(os.path.join(sys.argv[1], "eval_meta_data.csv"), "a") as f:
    f.write("too_long,0\n")
PYEOF
"${TRAIN[@]}" --steps 10 --core-every 5 --core-bundle "$TMP/longbundle" --run-dir "$TMP/longrun" \
  >"$TMP/long.out" 2>"$TMP/long.err"
check "a failing CORE evaluation does not stop training" \
  "[ $? -eq 0 ] && [ -s '$TMP/longrun/model.safetensors' ] && ls '$TMP'/longrun/checkpoints/step-00000010.safetensors >/dev/null"
check "... it is reported once, and summary.json says why" "[ \$(grep -c 'CORE evaluation failed' '$TMP/long.err') -eq 1 ] &&
  pyjson 's = json.load(open(T + \"/longrun/summary.json\")); assert s[\"core\"] is None and \"too_long\" in s[\"core_error\"], s'"
finish
