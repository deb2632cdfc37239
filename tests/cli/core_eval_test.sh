#!/usr/bin/env bash
# `nanotrain eval core` end to end: a tiny model trained for a few steps, a small bundle made by
# scripts/make_core_bundle.py, and the independent Python implementation of the reference
# harness (tools/core_ref) on the same weights: the same decision on every item, CORE to 1e-6.
# Then the command's other ways in (--checkpoint, --tasks, --skip-bad) and its one-line errors.
# usage: core_eval_test.sh NANOTRAIN SOURCE_DIR WORK_DIR
set -u
NT=$1 SRC=$2 TMP=$3
PY=/usr/bin/python3
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
if ! $PY -c "import torch, yaml, jinja2" 2>/dev/null; then
  skip "PyTorch, PyYAML or Jinja2 missing for /usr/bin/python3 (scripts/install_deps.sh installs them)"
  finish
fi

TEXT=/usr/share/common-licenses
"$NT" data prepare --input "$TEXT" --out "$TMP/data" >/dev/null
"$NT" train --data "$TMP/data" --preset tiny --seq-len 256 --steps 40 --run-dir "$TMP/run" --quiet \
  --save-every 40 >"$TMP/train.out" 2>&1
check "a tiny model trains" "[ -s '$TMP/run/model.safetensors' ]"
$PY "$SRC/scripts/make_core_bundle.py" --input "$TEXT" --out "$TMP/bundle" --items 40 --max-words 12 >/dev/null
check "make_core_bundle writes the official layout" \
  "[ -s '$TMP/bundle/core.yaml' ] && [ -s '$TMP/bundle/eval_meta_data.csv' ] && ls '$TMP'/bundle/eval_data/*/*.jsonl >/dev/null"
# A language-modeling task a model this small gets partly right ("... of" -> "the", greedily), so
# that the greedy decisions compared below are not all "wrong".
$PY - "$TEXT" "$TMP/bundle" <<'PYEOF'
import json, os, re, sys
text = " ".join(open(os.path.join(sys.argv[1], f), errors="replace").read() for f in sorted(os.listdir(sys.argv[1]))
                if os.path.isfile(os.path.join(sys.argv[1], f)))
words = text.split()
items = [{"context": " ".join(words[max(0, i - 8):i + 1]), "continuation": words[i + 1]}
         for i in range(len(words) - 1) if words[i] == "of" and re.fullmatch(r"[a-z]+", words[i + 1])][:60:2]
with open(os.path.join(sys.argv[2], "eval_data", "of_next.jsonl"), "w") as f:
    f.writelines(json.dumps(it) + "\n" for it in items)
with open(os.path.join(sys.argv[2], "core.yaml"), "a") as f:
    f.write("- label: of_next\n  dataset_uri: of_next.jsonl\n  num_fewshot: [3]\n  icl_task_type: language_modeling\n")
with open(os.path.join(sys.argv[2], "eval_meta_data.csv"), "a") as f:
    f.write("of_next,0\n")
PYEOF

# --- the tokenizer as tools/core_ref drives it: every string encoded, empty ones too, and BOS
out=$(printf '["ab", "", "\\u00e9"]' | "$NT" tokenizer encode --run-dir "$TMP/run" --json)
check "tokenizer encode --json ($out)" "[ '$out' = '{\"bos\":256,\"ids\":[[97,98],[],[195,169]]}' ]"
expect_error "tokenizer encode --json refuses what is not an array of strings" "--input" \
  bash -c "echo '[1]' | '$NT' tokenizer encode --run-dir '$TMP/run' --json"

# --- agreement with the independent reference implementation, item by item
"$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --max-per-task 30 --json "$TMP/core.json" \
  >"$TMP/core.out" 2>"$TMP/core.err"
check "eval core exits 0" "[ $? -eq 0 ]"
check "eval core prints a table and CORE" "grep -q '^task ' '$TMP/core.out' && grep -q '^CORE ' '$TMP/core.out'"
$PY "$SRC/tools/core_ref/core_ref.py" --nanotrain "$NT" --run-dir "$TMP/run" --bundle "$TMP/bundle" \
  --max-per-task 30 >"$TMP/ref.json" 2>"$TMP/ref.err"
check "core_ref.py runs" "[ $? -eq 0 ] && [ -s '$TMP/ref.json' ]"
agree() {  # agree NANOTRAIN_JSON REFERENCE_JSON MIN_ITEMS [mixed: the greedy decisions must not all be alike]
  $PY - "$@" <<'PYEOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert [t["label"] for t in a["tasks"]] == [t["label"] for t in b["tasks"]]
n = 0
for ta, tb in zip(a["tasks"], b["tasks"]):
    assert ta["shots"] == tb["shots"] and ta["items"] == tb["items"], (ta["label"], ta["shots"], tb["shots"])
    da = [(d["line"], d["pred"], d["correct"]) for d in ta["decisions"]]
    db = [(d["line"], d["pred"], d["correct"]) for d in tb["decisions"]]
    diff = [(x, y) for x, y in zip(da, db) if x != y]
    assert not diff, (ta["label"], diff[:5])
    assert abs(ta["accuracy"] - tb["accuracy"]) < 1e-12 and abs(ta["centered"] - tb["centered"]) < 1e-9
    n += len(da)
assert abs(a["core"] - b["core"]) < 1e-6, (a["core"], b["core"])
assert n >= int(sys.argv[3]), n
lm = [d["correct"] for t in a["tasks"] if t["type"] == "language_modeling" for d in t["decisions"]]
assert len(sys.argv) < 5 or (any(lm) and not all(lm)), "the greedy decisions should be mixed"
print(f"{n} items agree; CORE {a['core']:.6f}")
PYEOF
}
check "every decision and CORE agree with the reference implementation" "agree '$TMP/core.json' '$TMP/ref.json' 180 mixed"
"$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --max-per-task 30 --scorer fast \
  --json "$TMP/core_fast.json" >/dev/null 2>&1
check "--scorer fast: every decision and CORE agree with the reference implementation too" \
  "agree '$TMP/core_fast.json' '$TMP/ref.json' 180 mixed"
check "--scorer fast: each task's FLOPs, fewer than running every choice whole on multiple choice" "$PY -c '
import json; j = json.load(open(\"$TMP/core_fast.json\"))
assert all(0 < t[\"flops_run\"] <= t[\"flops_plain\"] and t[\"tokens_run\"] > 0 for t in j[\"tasks\"])
assert any(t[\"flops_run\"] < t[\"flops_plain\"] for t in j[\"tasks\"] if t[\"type\"] == \"multiple_choice\")
assert abs(sum(t[\"flops_run\"] for t in j[\"tasks\"]) - j[\"flops_run\"]) <= 1e-9 * j[\"flops_run\"]'"
check "the JSON names the bundle's checksum and the model" "$PY -c '
import json; j = json.load(open(\"$TMP/core.json\"))
assert len(j[\"bundle\"][\"sha256\"]) == 64 and len(j[\"model\"][\"weights_sha256\"]) == 64 and j[\"model\"][\"run_id\"]'"

# --- the same with a BPE tokenizer, whose tokens merge across the prompts' pieces
"$NT" tokenizer train --input "$TEXT" --vocab-size 400 --out "$TMP/bpe.tiktoken" >/dev/null
"$NT" data prepare --tokenizer "$TMP/bpe.tiktoken" --input "$TEXT" --out "$TMP/bpe_data" >/dev/null
"$NT" train --data "$TMP/bpe_data" --preset tiny --seq-len 128 --steps 40 --run-dir "$TMP/bpe_run" --quiet \
  >/dev/null 2>&1
"$NT" eval core --run-dir "$TMP/bpe_run" --bundle "$TMP/bundle" --max-per-task 12 --json "$TMP/bpe_core.json" \
  >/dev/null 2>&1
$PY "$SRC/tools/core_ref/core_ref.py" --nanotrain "$NT" --run-dir "$TMP/bpe_run" --bundle "$TMP/bundle" \
  --max-per-task 12 >"$TMP/bpe_ref.json" 2>"$TMP/bpe_ref.err"
check "with a BPE tokenizer too, every decision and CORE agree" \
  "agree '$TMP/bpe_core.json' '$TMP/bpe_ref.json' 100"

# --- the same weights through --checkpoint (the final weights file, and a training checkpoint)
"$NT" eval core --checkpoint "$TMP/run/model.safetensors" --bundle "$TMP/bundle" --max-per-task 30 \
  --json "$TMP/ck.json" >/dev/null 2>&1
check "--checkpoint model.safetensors gives the same CORE" \
  "$PY -c 'import json; a, b = (json.load(open(p)) for p in [\"$TMP/core.json\", \"$TMP/ck.json\"]); assert a[\"core\"] == b[\"core\"]'"
ck=$(ls "$TMP"/run/checkpoints/step-*.safetensors 2>/dev/null | tail -1)
"$NT" eval core --checkpoint "$ck" --bundle "$TMP/bundle" --max-per-task 30 --json "$TMP/ck2.json" >/dev/null 2>&1
check "--checkpoint of the last training checkpoint gives the same CORE" \
  "$PY -c 'import json; a, b = (json.load(open(p)) for p in [\"$TMP/core.json\", \"$TMP/ck2.json\"]); assert a[\"core\"] == b[\"core\"]'"

# --- --tasks, and a bad item skipped or refused
"$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --tasks next_sentence,last_word --max-per-task 5 \
  --json "$TMP/two.json" >/dev/null 2>&1
check "--tasks runs only those tasks, in the bundle's order" \
  "$PY -c 'import json; j = json.load(open(\"$TMP/two.json\")); assert [t[\"label\"] for t in j[\"tasks\"]] == [\"last_word\", \"next_sentence\"]'"
cp -r "$TMP/bundle" "$TMP/badbundle"
f="$TMP/badbundle/eval_data/multiple_choice/next_sentence.jsonl"
sed -i '3s/.*/{"query": "q", "choices": ["a", "b"], "gold": 7}/' "$f"
expect_error "a gold index out of range names the file and line" "next_sentence.jsonl:3: .*gold" \
  "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/badbundle" --max-per-task 5
"$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/badbundle" --max-per-task 5 --skip-bad --tasks next_sentence \
  >/dev/null 2>"$TMP/skip.err"
check "--skip-bad reports the item and goes on" "[ $? -eq 0 ] && grep -q 'next_sentence.jsonl:3' '$TMP/skip.err'"
expect_error "an unknown task type names core.yaml and its line" "core.yaml:[0-9]+: .*unknown icl_task_type" \
  bash -c "sed -i 's/icl_task_type: schema/icl_task_type: generation/' '$TMP/badbundle/core.yaml' && \
           '$NT' eval core --run-dir '$TMP/run' --bundle '$TMP/badbundle'"
expect_error "--tasks with an unknown task" "--tasks: 'nope'" \
  "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --tasks nope
expect_error "a missing bundle" "missing_bundle" "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/missing_bundle"
expect_error "--run-dir and --checkpoint together" "exactly one" \
  "$NT" eval core --run-dir "$TMP/run" --checkpoint "$TMP/run/model.safetensors" --bundle "$TMP/bundle"
expect_error "an unwritable --json fails before the evaluation" "nowhere/core.json" \
  "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --json "$TMP/nowhere/core.json"
expect_error "--scorer with an unknown name" "--scorer" \
  "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/bundle" --scorer quick
finish
