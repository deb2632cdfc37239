#!/usr/bin/env bash
# Side-by-side training throughput: nanotrain vs the independent PyTorch implementation
# (tools/torch_ref/train_bench.py, Debian's torch, 2 threads, pinned, fp32 and bf16 autocast),
# same model, same batch, same machine, one run. Prints tokens/s of each and the ratio.
#   tools/compare_pytorch.sh [DEPTH D_MODEL N_HEAD HEAD_DIM SEQ BATCH STEPS]
# Defaults: the `cpu` preset (4, 256, 4, 64, 256) with 16 sequences a step, 12 steps.
# Needs the default data (build/nanotrain train makes it on first use).
# NT_DTYPE=bf16|fp32 picks nanotrain's GEMM precision once `train` has --dtype (default bf16);
# NT=path/to/nanotrain picks the binary (default build/nanotrain). Where the shape is one of
# `nanotrain bench`'s models (cpu, d6 = 6/384/6/64, d8 = 8/512/8/64 at T 256), the bench's
# whole-step figures for fp32 and bf16 (random tokens, no data loading) are printed too.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPTH=${1:-4} DM=${2:-256} NH=${3:-4} HD=${4:-64} SEQ=${5:-256} B=${6:-16} STEPS=${7:-12}
NT=${NT:-build/nanotrain}
NT_DTYPE=${NT_DTYPE:-bf16}
dtype_flag=()
if $NT train --help 2>/dev/null | grep -q -- '--dtype'; then dtype_flag=(--dtype "$NT_DTYPE"); else NT_DTYPE=fp32; fi
out=$(mktemp -d)
$NT train --preset cpu --depth "$DEPTH" --d-model "$DM" --n-head "$NH" --head-dim "$HD" --seq-len "$SEQ" \
  --batch-size "$B" --steps "$STEPS" --run-dir "$out/nt" --sample-tokens 0 --eval-tokens 1 --quiet \
  "${dtype_flag[@]}" >/dev/null
# Steady state: skip the first 2 steps, as train_bench.py does.
nt_tps=$(/usr/bin/python3 - "$out/nt/metrics.jsonl" <<'PY'
import json, sys, statistics
s = [json.loads(l) for l in open(sys.argv[1]) if '"step"' in l and '"type":"step"' in l.replace(" ", "")]
print(round(statistics.median(x["tokens_per_second"] for x in s[2:])))
PY
)
best=0
for dtype in fp32 bf16; do
  # PyTorch's best setting here (PERF.md): OpenBLAS free to pick its AVX-512 kernels, passive waits.
  r=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/torch_ref/train_bench.py \
      --depth "$DEPTH" --d-model "$DM" --n-head "$NH" --head-dim "$HD" --seq-len "$SEQ" --vocab-size 8192 \
      --batch-size "$B" --steps "$STEPS" --threads 2 --dtype "$dtype" | tail -1)
  tps=$(/usr/bin/python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['tokens_per_second']))" "$r")
  echo "pytorch $dtype: $tps tokens/s"
  [ "$tps" -gt "$best" ] && best=$tps
done
echo "nanotrain train ($NT_DTYPE): $nt_tps tokens/s"
bench_model=""
case "$DEPTH/$DM/$NH/$HD/$SEQ" in
  4/256/4/64/256) bench_model=cpu ;;
  6/384/6/64/256) bench_model=d6 ;;
  8/512/8/64/256) bench_model=d8 ;;
esac
if [ -n "$bench_model" ] && $NT bench --help >/dev/null 2>&1; then
  $NT bench --no-kernels --configs "$bench_model" --dtype fp32,bf16 --batch-size "$B" --steps 3 \
    --json "$out/bench.json" >/dev/null
  /usr/bin/python3 - "$out/bench.json" "$best" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); best = float(sys.argv[2])
for s in j["steps"]:
    print(f"nanotrain bench step ({s['dtype']}): {s['tokens_per_second']:.0f} tokens/s, "
          f"MFU {100 * s['mfu']:.1f} % of {s['peak_gflops']:.0f} GFLOP/s measured; "
          f"{s['tokens_per_second'] / best:.2f}x best pytorch")
print(f"load average during the run: {j['machine']['loadavg_1min']:.2f}")
PY
fi
/usr/bin/python3 -c "print(f'ratio nanotrain / best pytorch: {$nt_tps / $best:.2f}x')"
rm -rf "$out"
