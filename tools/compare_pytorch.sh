#!/usr/bin/env bash
# Side-by-side training throughput: nanotrain vs the independent PyTorch implementation
# (tools/torch_ref/train_bench.py: Debian's torch, 2 threads, pinned, passive waits, OpenBLAS
# free to pick its AVX-512 kernels -- PyTorch's best setting here, PERF.md), same model, same
# batch, same machine, one run. For each model it prints PyTorch's tokens/s in fp32
# and with bf16 autocast, nanotrain's (`train`, bf16 where the CPU has it), and the ratio to the
# better PyTorch figure.
#   tools/compare_pytorch.sh                 # the cpu, d6 and d8 models
#   tools/compare_pytorch.sh d8              # one of them
#   tools/compare_pytorch.sh 4 256 4 64 256  # any shape: DEPTH D_MODEL N_HEAD HEAD_DIM SEQ
# Models: cpu = depth 4 / d 256 / 4 heads, d6 = 6 / 384 / 6, d8 = 8 / 512 / 8; head dim 64, T 256,
# vocab 8192 (the default data). Environment: BATCH sequences a step (default 32: 8,192 tokens,
# PERF.md's setting), STEPS (default 8; the first 2 are warm-up and not timed), NT (the binary,
# default build/nanotrain), NT_DTYPE (bf16 | fp32, default: nanotrain's own choice), JSON=FILE
# (also write the results as JSON).
# Needs the default data (build/nanotrain train makes it on first use) and /usr/bin/python3 with
# torch (Debian python3-torch).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BATCH:-32} STEPS=${STEPS:-8}
NT=${NT:-build/nanotrain}
dtype_flag=()
[ -n "${NT_DTYPE:-}" ] && dtype_flag=(--dtype "$NT_DTYPE")
if [ $# -ge 5 ]; then
  models=("$1/$2/$3/$4/$5")
elif [ $# -ge 1 ]; then
  models=("$@")
else
  models=(cpu d6 d8)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=()
median_steady() {  # median tokens/s of a run's steps after the first 2
  /usr/bin/python3 - "$1" <<'PY'
import json, sys, statistics
s = [json.loads(l) for l in open(sys.argv[1])]
s = [x for x in s if x.get("type") == "step"]
print(round(statistics.median(x["tokens_per_second"] for x in s[2:])))
PY
}
printf '%-22s %12s %12s %14s %8s\n' model "pytorch fp32" "pytorch bf16" "nanotrain" ratio
for model in "${models[@]}"; do
  case "$model" in
    cpu) shape=(4 256 4 64 256) ;;
    d6) shape=(6 384 6 64 256) ;;
    d8) shape=(8 512 8 64 256) ;;
    */*/*/*/*) IFS=/ read -r -a shape <<<"$model" ;;
    *) echo "compare_pytorch.sh: unknown model '$model' (cpu, d6, d8, or DEPTH D_MODEL N_HEAD HEAD_DIM SEQ)" >&2; exit 2 ;;
  esac
  read -r depth dm nh hd seq <<<"${shape[*]}"
  # PyTorch on random tokens (throughput does not depend on their values), then nanotrain on the data.
  pt=()
  for dtype in fp32 bf16; do
    r=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=PASSIVE \
        /usr/bin/python3 tools/torch_ref/train_bench.py --depth "$depth" --d-model "$dm" --n-head "$nh" \
        --head-dim "$hd" --seq-len "$seq" --vocab-size 8192 --batch-size "$B" --steps "$STEPS" --threads 2 \
        --dtype "$dtype" | tail -1)
    pt+=("$(/usr/bin/python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['tokens_per_second']))" "$r")")
  done
  "$NT" train --preset cpu --depth "$depth" --d-model "$dm" --n-head "$nh" --head-dim "$hd" --seq-len "$seq" \
    --batch-size "$B" --steps "$STEPS" --run-dir "$out/$depth-$dm" --sample-tokens 0 --eval-tokens 1 --quiet \
    "${dtype_flag[@]}" >/dev/null
  nt=$(median_steady "$out/$depth-$dm/metrics.jsonl")
  dt=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['dtype'])" "$out/$depth-$dm/config.json")
  best=$((pt[0] > pt[1] ? pt[0] : pt[1]))
  ratio=$(/usr/bin/python3 -c "print(f'{$nt / $best:.2f}')")
  printf '%-22s %12s %12s %14s %7sx\n' "$model ($depth/$dm/$nh/$hd/$seq)" "${pt[0]}" "${pt[1]}" "$nt ($dt)" "$ratio"
  results+=("{\"model\": \"$model\", \"depth\": $depth, \"d_model\": $dm, \"n_head\": $nh, \"head_dim\": $hd, \"seq_len\": $seq, \"batch_size\": $B, \"pytorch_fp32\": ${pt[0]}, \"pytorch_bf16\": ${pt[1]}, \"nanotrain\": $nt, \"nanotrain_dtype\": \"$dt\", \"ratio\": $ratio}")
done
echo "tokens/s, median of steps 3..$STEPS, $B x seq tokens a step; load average now: $(cut -d' ' -f1 /proc/loadavg)"
if [ -n "${JSON:-}" ]; then
  (IFS=,; echo "[${results[*]}]") | /usr/bin/python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin), indent=2))" >"$JSON"
fi
