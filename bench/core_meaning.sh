#!/usr/bin/env bash
# Does CORE measure learning? The project's own bundle (scripts/make_core_bundle.py over the
# default corpus's validation text, which training never sees), scored for an untrained model
# (one step at learning rate 0: the initial weights) and for `cpu`-preset runs of each budget.
# Prints every task's accuracy and centered score side by side, with CORE and val_bpb.
#
# usage: bench/core_meaning.sh [WORK_DIR]      (default build/core_meaning; reused between runs:
#                                              a model already trained there is not trained again)
#   environment (defaults shown):
#   NT=build/nanotrain  BUDGETS="5m 30m"  THREADS=0  ITEMS=500
#   DATA=data/shards-8192              prepared default corpus (`nanotrain train` makes it on first use)
#   VAL_TEXT=data/corpus/val.jsonl     the text the bundle is cut from
#   TRAIN_ONLY=1                       train the missing models and stop (to train budgets in
#                                      parallel, each on its own cores, then score them together)
#   QUICK=1                            a smoke run: budgets 5s and 10s, 30 items a task
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NT=${NT:-$ROOT/build/nanotrain}
WORK=${1:-$ROOT/build/core_meaning}
PY=/usr/bin/python3
BUDGETS=${BUDGETS:-5m 30m} THREADS=${THREADS:-0} ITEMS=${ITEMS:-500}
DATA=${DATA:-data/shards-8192} VAL_TEXT=${VAL_TEXT:-data/corpus/val.jsonl}
if [ "${QUICK:-0}" = 1 ]; then
  BUDGETS="5s 10s" ITEMS=30 WORK=$WORK-quick
fi
[ -x "$NT" ] || { echo "core_meaning.sh: $NT is not an executable (build it, or set NT)" >&2; exit 2; }
[ -s "$DATA/data.json" ] || { echo "core_meaning.sh: $DATA: no prepared data (run \`nanotrain train\` once, or set DATA)" >&2; exit 2; }
[ -s "$VAL_TEXT" ] || { echo "core_meaning.sh: $VAL_TEXT: no validation text (run \`nanotrain data fetch\`, or set VAL_TEXT)" >&2; exit 2; }
mkdir -p "$WORK"

bundle=$WORK/bundle-$ITEMS
if [ ! -s "$bundle/core.yaml" ]; then
  echo "making the bundle ($ITEMS items a task) from $VAL_TEXT in $bundle" >&2
  $PY "$ROOT/scripts/make_core_bundle.py" --items "$ITEMS" --input "$VAL_TEXT" --out "$bundle" >/dev/null
fi

common=(--data "$DATA" --preset cpu --threads "$THREADS" --save-every 0 --sample-tokens 0 --quiet)
models=(untrained)
if [ ! -s "$WORK/untrained/summary.json" ]; then
  echo "the untrained model: one step at learning rate 0" >&2
  "$NT" train "${common[@]}" --steps 1 --lr-matrix 0 --lr-embed 0 --lr-head 0 --run-dir "$WORK/untrained" \
    --overwrite >/dev/null
fi
for b in $BUDGETS; do
  models+=("$b")
  if [ ! -s "$WORK/$b/summary.json" ]; then
    echo "training the cpu preset for $b in $WORK/$b" >&2
    "$NT" train "${common[@]}" --time-budget "$b" --run-dir "$WORK/$b" --overwrite >/dev/null
  fi
done
[ "${TRAIN_ONLY:-0}" = 1 ] && exit 0

for m in "${models[@]}"; do
  echo "CORE of $m" >&2
  "$NT" eval core --run-dir "$WORK/$m" --bundle "$bundle" --threads "$THREADS" --json "$WORK/core-$m.json" >/dev/null
done

$PY - "$WORK" "${models[@]}" <<'PYEOF'
import json, os, sys
work, models = sys.argv[1], sys.argv[2:]
core = {m: json.load(open(os.path.join(work, f"core-{m}.json"))) for m in models}
summ = {m: json.load(open(os.path.join(work, m, "summary.json"))) for m in models}
print("| task | " + " | ".join(f"{m} acc / centered" for m in models) + " |")
print("| --- |" + " --- |" * len(models))
for i, t in enumerate(core[models[0]]["tasks"]):
    cells = [f"{core[m]['tasks'][i]['accuracy']:.3f} / {core[m]['tasks'][i]['centered']:+.3f}" for m in models]
    print(f"| {t['label']} ({t['type']}, {t['items']} items) | " + " | ".join(cells) + " |")
print("| **CORE** | " + " | ".join(f"**{core[m]['core']:+.4f}**" for m in models) + " |")
print("| val_bpb | " + " | ".join(f"{summ[m]['val_bpb']:.4f}" for m in models) + " |")
print("| training steps | " + " | ".join(str(summ[m]["steps"]) for m in models) + " |")
PYEOF
