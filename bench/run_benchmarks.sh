#!/usr/bin/env bash
# Re-measures the results table of README.md and docs/BENCHMARKS.md on this machine and prints
# it as a Markdown table (date, CPU and commit filled in), so that a new row can be pasted in.
#   bench/run_benchmarks.sh                       # everything: about an hour on 2 cores
#   SKIP_PYTORCH=1 BUDGETS=5m bench/run_benchmarks.sh
#   QUICK=1 bench/run_benchmarks.sh               # smoke run of every part (rough figures)
# Environment:
#   NT            the binary (default build/nanotrain; built if missing)
#   CONFIGS       models for `nanotrain bench` (default cpu,d6,d8)
#   DTYPES        dtypes for `nanotrain bench` (default bf16,fp32)
#   STEPS         timed steps per model in `bench` (default 3)
#   SKIP_PYTORCH  1: skip tools/compare_pytorch.sh (needs python3-torch)
#   ROUNDS        rounds of tools/compare_pytorch.sh (default 2, interleaved)
#   PT_BUDGET     seconds of training for compare_pytorch.sh's val_bpb (default 120; 0 skips)
#   BUDGETS       time budgets for `nanotrain train` val_bpb runs (default "5m 30m"; "" skips)
#   DATA          --data for those runs (default: the default corpus, fetched on first use)
#   OUT           folder for the raw results (default $TMPDIR/nanotrain-bench-DATE-TIME)
#   QUICK         1: `bench --quick`, one model, compare_pytorch.sh with 3 steps, 10 s budgets
set -euo pipefail
cd "$(dirname "$0")/.."
NT=${NT:-build/nanotrain}
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  CONFIGS=${CONFIGS:-cpu} STEPS=${STEPS:-1} ROUNDS=${ROUNDS:-1} PT_BUDGET=${PT_BUDGET:-10}
  BUDGETS=${BUDGETS-10s} PT_STEPS=3 PT_MODELS=(cpu)
else
  CONFIGS=${CONFIGS:-cpu,d6,d8} STEPS=${STEPS:-3} ROUNDS=${ROUNDS:-2} PT_BUDGET=${PT_BUDGET:-120}
  BUDGETS=${BUDGETS-5m 30m} PT_STEPS=8 PT_MODELS=()
fi
DTYPES=${DTYPES:-bf16,fp32}
OUT=${OUT:-${TMPDIR:-/tmp}/nanotrain-bench-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
if [ ! -x "$NT" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" --target nanotrain
fi

log() { echo "== $*" >&2; }
quick_flag=()
[ "$QUICK" = 1 ] && quick_flag=(--quick)

# 1. tokens/s and MFU per model and dtype: whole training steps at 8,192 tokens a step.
log "nanotrain bench --no-kernels --configs $CONFIGS --dtype $DTYPES --steps $STEPS ${quick_flag[*]}"
"$NT" bench --no-kernels --configs "$CONFIGS" --dtype "$DTYPES" --steps "$STEPS" "${quick_flag[@]}" \
  --json "$OUT/bench.json" >"$OUT/bench.txt"

# 2. The same models side by side with PyTorch, and val_bpb of both after PT_BUDGET seconds.
if [ "${SKIP_PYTORCH:-0}" != 1 ]; then
  log "tools/compare_pytorch.sh (ROUNDS=$ROUNDS BUDGET=$PT_BUDGET)"
  ROUNDS=$ROUNDS BUDGET=$PT_BUDGET STEPS=$PT_STEPS NT=$NT JSON="$OUT/compare.json" \
    tools/compare_pytorch.sh "${PT_MODELS[@]}" >"$OUT/compare.txt"
fi

# 3. val_bpb of the default `cpu` preset after each training budget.
data_flag=()
[ -n "${DATA:-}" ] && data_flag=(--data "$DATA")
for b in $BUDGETS; do
  log "nanotrain train --time-budget $b"
  "$NT" train --time-budget "$b" --run-dir "$OUT/train-$b" --sample-tokens 0 --save-every 0 --quiet \
    "${data_flag[@]}" >"$OUT/train-$b.txt"
done

# The table.
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
family=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1)
[ -n "$family" ] && cpu="$cpu (family $(printf '%Xh' "$family"))"
cores=$(nproc)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
/usr/bin/python3 - "$OUT" "$cpu, $cores threads" "$(date -u +%F)" "$commit" "$CONFIGS" "$BUDGETS" "$QUICK" "$DTYPES" <<'PY'
import json, os, sys
out, cpu, date, commit, configs, budgets, quick, dtypes = sys.argv[1:9]
models = configs.split(",")
names = {"cpu": "`cpu`", "d6": "depth 6", "d8": "depth 8", "frontier": "`frontier`"}
tail = f"{cpu} | {date} | {commit}"
rows = []
bench = json.load(open(f"{out}/bench.json"))
steps = {(s["model"], s["dtype"]): s for s in bench.get("steps", [])}
cmd = "`nanotrain bench --no-kernels --configs %s --dtype %s`" % (configs, dtypes)
for dtype in ("bf16", "fp32"):
    if any((m, dtype) in steps for m in models):
        cell = lambda m, f: f(steps[(m, dtype)]) if (m, dtype) in steps else ""
        rows.append([f"tokens/s, {dtype}"] + [cell(m, lambda s: f"{s['tokens_per_second']:,.0f}") for m in models] + [cmd])
        rows.append([f"MFU, {dtype}"] + [cell(m, lambda s: f"{100 * s['mfu']:.1f} %") for m in models] + [cmd])
if os.path.exists(f"{out}/compare.json"):
    cmp = json.load(open(f"{out}/compare.json"))
    by = {r["model"]: r for r in cmp["throughput"]}
    cmd = "`tools/compare_pytorch.sh`"
    rows.append(["× PyTorch (best of fp32 / bf16 autocast)"]
                + [f"{by[m]['ratio']:.2f}×" if m in by else "" for m in models] + [cmd])
    vb = cmp.get("val_bpb")
    if vb:
        cells = [""] * len(models)
        cells[0] = f"{vb['nanotrain']['val_bpb']:.4f} / {vb['pytorch']['val_bpb']:.4f}"
        rows.append([f"val_bpb after {vb['budget_seconds']:.0f} s, nanotrain / PyTorch"] + cells + [cmd])
for b in budgets.split():
    s = json.load(open(f"{out}/train-{b}/summary.json"))
    cells = [""] * len(models)
    cells[0] = f"{s['val_bpb']:.4f}"
    rows.append([f"val_bpb after {b} (`{s.get('preset', 'cpu')}` preset)"] + cells
                + [f"`nanotrain train --time-budget {b}`"])
print("| figure | " + " | ".join(names.get(m, m) for m in models) + " | CPU | date | commit | command |")
print("| --- " * (len(models) + 5) + "|")
for r in rows:
    print("| " + " | ".join(r[:-1]) + f" | {tail} | {r[-1]} |")
if quick == "1":
    print("\n(QUICK=1: a smoke run; these figures are rough and not for the table.)")
print(f"\nraw results: {out}/")
PY
