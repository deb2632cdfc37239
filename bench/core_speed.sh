#!/usr/bin/env bash
# CORE evaluation speed: a bundle of the official 22 tasks' shapes (scripts/make_core_bundle.py
# --official-shapes), a model of the given preset trained a few steps (speed does not depend on
# quality), `nanotrain eval core --scorer fast` over all of it, and a short training run of the
# same model for its tokens/s. Prints the total time, items/s, the evaluation's forward tokens/s
# against training's (target: at least 2.5x) and the FLOPs that prefix sharing saves on the
# multiple-choice tasks (target: at least 40 %). Run it on an otherwise idle machine.
#
# usage: bench/core_speed.sh [WORK_DIR]      (default build/core_speed; reused between runs)
#   environment (defaults shown):
#   NT=build/nanotrain  PRESET=cpu  ITEMS=500  STEPS=10  THREADS=0
#   DATA=                prepared data for the model (default: the default corpus, made on first use)
#   TEXT=/usr/share/common-licenses   text the bundle's items are cut from
#   PLAIN_TASKS=         also run these tasks (comma-separated) with the plain scorer, for its speed
#   QUICK=1              a smoke run: 2 tasks x 20 items, 2 training steps
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
NT=${NT:-$ROOT/build/nanotrain}
WORK=${1:-$ROOT/build/core_speed}
PY=/usr/bin/python3
PRESET=${PRESET:-cpu} ITEMS=${ITEMS:-500} STEPS=${STEPS:-10} THREADS=${THREADS:-0}
TEXT=${TEXT:-/usr/share/common-licenses} PLAIN_TASKS=${PLAIN_TASKS:-} TASKS=
if [ "${QUICK:-0}" = 1 ]; then
  ITEMS=20 STEPS=2 TASKS=hellaswag,lambada_openai
  WORK=$WORK-quick
fi
[ -x "$NT" ] || { echo "core_speed.sh: $NT is not an executable (build it, or set NT)" >&2; exit 2; }
mkdir -p "$WORK"
data_flag=()
[ -n "${DATA:-}" ] && data_flag=(--data "$DATA")

bundle=$WORK/bundle-$ITEMS
if [ ! -s "$bundle/core.yaml" ]; then
  echo "making the official-shapes bundle ($ITEMS items a task) in $bundle" >&2
  $PY scripts/make_core_bundle.py --official-shapes --items "$ITEMS" --input "$TEXT" --out "$bundle" >/dev/null
fi

# The model, and training's tokens/s from its summary (the final evaluation kept small).
run=$WORK/run-$PRESET
if [ ! -s "$run/summary.json" ]; then
  echo "training the $PRESET model for $STEPS steps in $run" >&2
  "$NT" train "${data_flag[@]}" --preset "$PRESET" --steps "$STEPS" --run-dir "$run" --overwrite --quiet \
    --save-every 0 --sample-tokens 0 --eval-tokens 4096 --threads "$THREADS" >/dev/null
fi

task_flag=()
[ -n "$TASKS" ] && task_flag=(--tasks "$TASKS")
echo "CORE with the fast scorer" >&2
"$NT" eval core --run-dir "$run" --bundle "$bundle" --scorer fast --threads "$THREADS" "${task_flag[@]}" \
  --json "$WORK/fast.json" >"$WORK/fast.out"
if [ -n "$PLAIN_TASKS" ]; then
  echo "the plain scorer on $PLAIN_TASKS, and the fast one on the same" >&2
  for s in plain fast; do
    "$NT" eval core --run-dir "$run" --bundle "$bundle" --scorer $s --threads "$THREADS" --tasks "$PLAIN_TASKS" \
      --json "$WORK/subset-$s.json" >/dev/null
  done
fi

$PY - "$WORK" "$run/summary.json" "$PLAIN_TASKS" <<'PYEOF'
import json, os, sys
work, summary, plain_tasks = sys.argv[1:4]
f, s = json.load(open(os.path.join(work, "fast.json"))), json.load(open(summary))
print(f"model: preset {s['preset']}, {s['params_total'] / 1e6:.1f} M parameters, seq_len {f['model']['seq_len']}, "
      f"{s['threads']} thread(s); training in {s['dtype']}, CORE in fp32")
print(f"CORE (fast scorer): {len(f['tasks'])} tasks, {f['items']} items in {f['seconds']:.1f} s "
      f"(target for 22 x 500: under 180 s), {f['items_per_second']:.1f} items/s, CORE {f['core'] if abs(f['core']) > 5e-9 else 0.0:.4f}")
ratio = f["tokens_per_second"] / s["tokens_per_second"]
print(f"forward tokens/s: evaluation {f['tokens_per_second']:.0f}, training {s['tokens_per_second']:.0f}: "
      f"ratio {ratio:.2f} (target >= 2.5)")
# The steady state, without the first steps' warm-up that the run's average includes.
steps = [json.loads(l) for l in open(os.path.join(os.path.dirname(summary), "metrics.jsonl"))]
tps = sorted(j["tokens_per_second"] for j in steps if j.get("type") == "step" and j["step"] > 1)
if tps:
    med = tps[len(tps) // 2]
    print(f"  against training's median step ({med:.0f} tokens/s over {len(tps)} steps): ratio {f['tokens_per_second'] / med:.2f}")
mc = [t for t in f["tasks"] if t["type"] == "multiple_choice"]
if mc:
    run, plain = sum(t["flops_run"] for t in mc), sum(t["flops_plain"] for t in mc)
    print(f"prefix sharing on the {len(mc)} multiple-choice task(s): {100 * (1 - run / plain):.1f} % of the FLOPs saved "
          f"(target >= 40 %)")
    for t in mc:
        print(f"  {t['label']:34} {100 * (1 - t['flops_run'] / t['flops_plain']):5.1f} %")
if plain_tasks:
    p, q = (json.load(open(os.path.join(work, f"subset-{x}.json"))) for x in ("plain", "fast"))
    same = all(a["decisions"] == b["decisions"] for a, b in zip(p["tasks"], q["tasks"]))
    print(f"plain scorer on {plain_tasks}: {p['seconds']:.1f} s, fast: {q['seconds']:.1f} s "
          f"({p['seconds'] / q['seconds']:.2f}x); the same decisions: {same}")
PYEOF
