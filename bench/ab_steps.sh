#!/usr/bin/env bash
# Whole training steps of two nanotrain binaries side by side: runs `bench --no-kernels` of A and
# B in turn, ROUNDS times (alternating, so that both see the machine's drift alike), and prints
# each model and dtype's median tokens/s for both and the median of the per-round ratios B/A.
#
# usage: bench/ab_steps.sh OLD_BINARY NEW_BINARY
#   ROUNDS=5 CONFIGS=cpu,d6,d8 DTYPES=bf16,fp32 STEPS=3 (environment, defaults shown)
set -euo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: bench/ab_steps.sh OLD_BINARY NEW_BINARY (both executable)" >&2
  exit 2
fi
a=$1 b=$2
rounds=${ROUNDS:-5} configs=${CONFIGS:-cpu,d6,d8} dtypes=${DTYPES:-bf16,fp32} steps=${STEPS:-3}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for i in $(seq "$rounds"); do
  for side in A B; do
    bin=$a
    [ "$side" = B ] && bin=$b
    "$bin" bench --no-kernels --configs "$configs" --dtype "$dtypes" --steps "$steps" |
      awk -v r="$i" -v s="$side" '$1 ~ /^(cpu|d6|d8|frontier)$/ && $2 ~ /^(bf16|fp32)$/ {print r, s, $1, $2, $4}' >>"$log"
  done
  echo "round $i of $rounds done" >&2
done
python3 - "$log" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
tps = {}
for r, side, model, dtype, t in rows:
    tps.setdefault((model, dtype), {}).setdefault(side, {})[int(r)] = float(t)
print(f"{'model':8} {'dtype':5} {'A tokens/s':>11} {'B tokens/s':>11} {'B/A':>7}  per-round B/A")
for (model, dtype), s in tps.items():
    ratios = [s['B'][r] / s['A'][r] for r in sorted(s['A']) if r in s['B']]
    print(f"{model:8} {dtype:5} {statistics.median(s['A'].values()):11.0f} {statistics.median(s['B'].values()):11.0f} "
          f"{statistics.median(ratios):7.3f}  " + " ".join(f"{x:.3f}" for x in ratios))
PY
