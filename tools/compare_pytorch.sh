#!/usr/bin/env bash
# Side-by-side training throughput: nanotrain vs the independent PyTorch implementation
# (tools/torch_ref/train_bench.py: Debian's torch, 2 threads, pinned, passive waits, OpenBLAS
# free to pick its AVX-512 kernels -- PyTorch's best setting here -- and glibc's malloc
# keeping freed memory for reuse, PT_MALLOC below), same model, same
# batch, same machine, one run. For each model it prints PyTorch's tokens/s in fp32
# and with bf16 autocast, nanotrain's (`train`, bf16 where the CPU has it), and the ratio to the
# better PyTorch figure. Then the quality side: both train the first model for the same
# training-time budget on the same data (the default corpus, tokenizer and shards), each with
# its own loader (nanotrain: best-fit packing of shuffled documents; PyTorch: random windows of
# the same training shards, nanoGPT's sampling), the same optimizers, hyperparameters and
# learning-rate schedule (constant, linear warm-down over the second half), PyTorch in its
# faster dtype; then `nanotrain eval bpb` scores both models on the validation text, the same
# evaluation code for both, and the script prints steps, tokens and val_bpb side by side.
#   tools/compare_pytorch.sh                 # the cpu, d6 and d8 models
#   tools/compare_pytorch.sh d8              # one of them
#   tools/compare_pytorch.sh 4 256 4 64 256  # any shape: DEPTH D_MODEL N_HEAD HEAD_DIM SEQ
# Models: cpu = depth 4 / d 256 / 4 heads, d6 = 6 / 384 / 6, d8 = 8 / 512 / 8; head dim 64, T 256,
# vocab 8192 (the default data). Environment: BATCH sequences a step (default 32: 8,192 tokens,
# the step docs/BENCHMARKS.md reports), STEPS (default 8; the first 2 are warm-up and not timed), NT (the binary,
# default build/nanotrain), NT_DTYPE (bf16 | fp32, default: nanotrain's own choice), ROUNDS
# (default 1: how many times to measure every model; the rounds interleave, round 1 of every
# model, then round 2, so that a slow spell of a shared machine lands on both sides; the table
# gives each column's median over the rounds and the ratio's median, with its range in the
# rounds), JSON=FILE (also write the results as JSON, every round's figures too), BUDGET
# (seconds of training for the val_bpb comparison, default 120; 0 skips it), SVG=FILE (also draw
# the results: tokens/s bars and both training losses over the budget; tools/compare_chart.py).
# Needs the default data (build/nanotrain train makes it on first use) and /usr/bin/python3 with
# torch (Debian python3-torch).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BATCH:-32} STEPS=${STEPS:-8} BUDGET=${BUDGET:-120} ROUNDS=${ROUNDS:-1}
case "$ROUNDS" in
  '' | *[!0-9]* | 0) echo "compare_pytorch.sh: ROUNDS must be a whole number >= 1 (got '$ROUNDS')" >&2; exit 2 ;;
esac
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
for f in "${JSON:-}" "${SVG:-}"; do  # before half an hour of measuring, not after
  if [ -n "$f" ] && [ ! -d "$(dirname "$f")" ]; then
    echo "compare_pytorch.sh: $f: no folder $(dirname "$f") to write into" >&2
    exit 2
  fi
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# PyTorch's CPU allocator hands every tensor back to glibc's malloc, which returns the large ones
# to the kernel at once, so each step faults their pages in again; on a virtual machine that
# halves PyTorch's speed. No mmap, no trimming and huge pages keep the memory in the process
# (figures in docs/BENCHMARKS.md).
PT_MALLOC=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.hugetlb=1
PT_ENV=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_PROC_BIND=true OMP_PLACES=cores OMP_WAIT_POLICY=PASSIVE
  GLIBC_TUNABLES="$PT_MALLOC")
shape_of() {  # prints DEPTH D_MODEL N_HEAD HEAD_DIM SEQ
  case "$1" in
    cpu) echo 4 256 4 64 256 ;;
    d6) echo 6 384 6 64 256 ;;
    d8) echo 8 512 8 64 256 ;;
    */*/*/*/*) echo "${1//\// }" ;;
    *) echo "compare_pytorch.sh: unknown model '$1' (cpu, d6, d8, or DEPTH D_MODEL N_HEAD HEAD_DIM SEQ)" >&2; exit 2 ;;
  esac
}
median_steady() {  # median tokens/s of a run's steps after the first 2
  /usr/bin/python3 - "$1" <<'PY'
import json, sys, statistics
s = [json.loads(l) for l in open(sys.argv[1])]
s = [x for x in s if x.get("type") == "step"]
print(round(statistics.median(x["tokens_per_second"] for x in s[2:])))
PY
}
for model in "${models[@]}"; do shape_of "$model" >/dev/null; done  # unknown names fail before any run
raw="$out/throughput.jsonl"
for round in $(seq "$ROUNDS"); do
  for model in "${models[@]}"; do
    read -r depth dm nh hd seq <<<"$(shape_of "$model")"
    # PyTorch on random tokens (throughput does not depend on their values), then nanotrain on the data.
    pt=()
    for dtype in fp32 bf16; do
      r=$("${PT_ENV[@]}" /usr/bin/python3 tools/torch_ref/train_bench.py --depth "$depth" --d-model "$dm" \
          --n-head "$nh" --head-dim "$hd" --seq-len "$seq" --vocab-size 8192 --batch-size "$B" --steps "$STEPS" \
          --threads 2 --dtype "$dtype" | tail -1)
      pt+=("$(/usr/bin/python3 -c "import json,sys; print(round(json.loads(sys.argv[1])['tokens_per_second']))" "$r")")
    done
    run="$out/$depth-$dm-$round"
    "$NT" train --preset cpu --depth "$depth" --d-model "$dm" --n-head "$nh" --head-dim "$hd" --seq-len "$seq" \
      --batch-size "$B" --steps "$STEPS" --run-dir "$run" --sample-tokens 0 --eval-tokens 1 --quiet \
      "${dtype_flag[@]}" >/dev/null
    nt=$(median_steady "$run/metrics.jsonl")
    dt=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['dtype'])" "$run/config.json")
    echo "{\"round\": $round, \"model\": \"$model\", \"shape\": \"$depth/$dm/$nh/$hd/$seq\", \"depth\": $depth," \
      "\"d_model\": $dm, \"n_head\": $nh, \"head_dim\": $hd, \"seq_len\": $seq, \"pytorch_fp32\": ${pt[0]}," \
      "\"pytorch_bf16\": ${pt[1]}, \"nanotrain\": $nt, \"nanotrain_dtype\": \"$dt\"}" >>"$raw"
    if [ "$ROUNDS" -gt 1 ]; then
      echo "  round $round/$ROUNDS $model: pytorch fp32 ${pt[0]}, bf16 ${pt[1]}, nanotrain $nt ($dt)" >&2
    fi
  done
done
# The table (medians over the rounds) and, for the val_bpb half, PyTorch's faster dtype per model.
/usr/bin/python3 - "$raw" "$B" "$STEPS" "$ROUNDS" "$out/throughput.json" "$out/pt_best" <<'PY'
import json, statistics, sys
raw, batch, steps, rounds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
json_out, best_out = sys.argv[5], sys.argv[6]
rows = [json.loads(line) for line in open(raw)]
med = lambda xs: statistics.median(xs)
print(f"{'model':22} {'pytorch fp32':>12} {'pytorch bf16':>12} {'nanotrain':>14} {'ratio':>8}"
      + ("   ratio range" if rounds > 1 else ""))
results, best = [], []
for model in dict.fromkeys(r["model"] for r in rows):
    rs = [r for r in rows if r["model"] == model]
    ratios = [r["nanotrain"] / max(r["pytorch_fp32"], r["pytorch_bf16"]) for r in rs]
    fp32, bf16, nt = (round(med([r[key] for r in rs])) for key in ("pytorch_fp32", "pytorch_bf16", "nanotrain"))
    ratio, first = round(med(ratios), 2), rs[0]
    span = f"   {min(ratios):.2f}-{max(ratios):.2f}" if rounds > 1 else ""
    label = model if model == first["shape"] else f"{model} ({first['shape']})"
    print(f"{label:22} {fp32:12d} {bf16:12d} {str(nt) + ' (' + first['nanotrain_dtype'] + ')':>14}"
          f" {ratio:7.2f}x{span}")
    best.append(f"{model} {'fp32' if fp32 > bf16 else 'bf16'}")
    results.append({"model": model, **{k: first[k] for k in ("depth", "d_model", "n_head", "head_dim", "seq_len")},
                    "batch_size": batch, "pytorch_fp32": fp32, "pytorch_bf16": bf16, "nanotrain": nt,
                    "nanotrain_dtype": first["nanotrain_dtype"], "ratio": ratio, "ratio_min": round(min(ratios), 2),
                    "ratio_max": round(max(ratios), 2),
                    "rounds": [{k: r[k] for k in ("pytorch_fp32", "pytorch_bf16", "nanotrain")} for r in rs]})
json.dump(results, open(json_out, "w"))
open(best_out, "w").write("\n".join(best) + "\n")
print(f"tokens/s, median of steps 3..{steps}, {batch} x seq tokens a step"
      + (f"; each figure the median of {rounds} interleaved rounds, ratio = median of the rounds' ratios"
         if rounds > 1 else ""))
PY
echo "load average now: $(cut -d' ' -f1 /proc/loadavg)"

bpb_json=null
if [ "$BUDGET" != 0 ]; then
  model=${models[0]}
  read -r depth dm nh hd seq <<<"$(shape_of "$model")"
  ptd=$(awk -v m="$model" '$1 == m { print $2 }' "$out/pt_best")
  echo
  echo "val_bpb after ${BUDGET} s of training, same data, $B x $seq tokens a step, model $model ($depth/$dm/$nh/$hd/$seq):"
  "$NT" train --preset cpu --depth "$depth" --d-model "$dm" --n-head "$nh" --head-dim "$hd" --seq-len "$seq" \
    --batch-size "$B" --time-budget "${BUDGET}s" --run-dir "$out/bpb-nt" --sample-tokens 0 --save-every 0 --quiet \
    "${dtype_flag[@]}" >/dev/null
  # PyTorch's run folder: its weights beside the nanotrain run's settings and tokenizer, so that
  # `nanotrain eval bpb` reads both the same way.
  mkdir -p "$out/bpb-pt"
  cp "$out/bpb-nt/config.json" "$out/bpb-pt/"
  cp "$out/bpb-nt"/tokenizer* "$out/bpb-pt/" 2>/dev/null || true  # none for byte tokens
  data_dir=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data_dir'])" "$out/bpb-nt/config.json")
  "${PT_ENV[@]}" /usr/bin/python3 tools/torch_ref/train_bench.py --depth "$depth" --d-model "$dm" --n-head "$nh" \
    --head-dim "$hd" --seq-len "$seq" --vocab-size 8192 --batch-size "$B" --threads 2 --dtype "$ptd" \
    --shards "$data_dir" --time-budget "$BUDGET" --save-weights "$out/bpb-pt/model.safetensors" \
    | tail -1 >"$out/bpb-pt/run.json"
  val=(--input data/corpus/val.jsonl --json)
  "$NT" eval bpb --run-dir "$out/bpb-nt" "${val[@]}" >"$out/bpb-nt/eval.json"
  "$NT" eval bpb --run-dir "$out/bpb-pt" "${val[@]}" >"$out/bpb-pt/eval.json"
  /usr/bin/python3 - "$out" "$ptd" "$BUDGET" <<'PY'
import json, sys
out, ptd, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
nt_sum = json.load(open(f"{out}/bpb-nt/summary.json"))
nt_cfg = json.load(open(f"{out}/bpb-nt/config.json"))
pt_run = json.loads(open(f"{out}/bpb-pt/run.json").read())
nt_ev, pt_ev = (json.load(open(f"{out}/bpb-{s}/eval.json")) for s in ("nt", "pt"))
rows = [("pytorch (" + ptd + ")", pt_run["steps"], pt_run["tokens_trained"], pt_run["train_seconds"], pt_ev["bpb"]),
        ("nanotrain (" + nt_cfg["dtype"] + ")", nt_sum["steps"], nt_sum["tokens_trained"], nt_sum["train_seconds"],
         nt_ev["bpb"])]
print(f"  {'':18} {'steps':>7} {'tokens':>12} {'train s':>8} {'val_bpb':>8}")
for name, steps, tokens, secs, bpb in rows:
    print(f"  {name:18} {steps:7d} {tokens:12,d} {secs:8.1f} {bpb:8.4f}")
print(f"  (nanotrain's own end-of-training val_bpb: {nt_sum['val_bpb']:.4f}; both scored by `nanotrain eval bpb` on"
      f" data/corpus/val.jsonl, {nt_ev['targets']} targets, {nt_ev['bytes']} bytes)")
json.dump({"budget_seconds": budget, "pytorch": {"dtype": ptd, "steps": pt_run["steps"],
                  "tokens_trained": pt_run["tokens_trained"], "train_seconds": pt_run["train_seconds"],
                  "val_bpb": pt_ev["bpb"]},
                  "nanotrain": {"dtype": nt_cfg["dtype"], "steps": nt_sum["steps"],
                  "tokens_trained": nt_sum["tokens_trained"], "train_seconds": nt_sum["train_seconds"],
                  "val_bpb": nt_ev["bpb"], "val_bpb_summary": nt_sum["val_bpb"]}}, open(f"{out}/bpb.json", "w"))
PY
  bpb_json=$(cat "$out/bpb.json")
fi
if [ -n "${SVG:-}" ]; then
  chart=(--throughput "$out/throughput.json" --out "$SVG")
  [ "$BUDGET" != 0 ] && chart+=(--bpb "$out/bpb.json" --nt-metrics "$out/bpb-nt/metrics.jsonl" --pt-run "$out/bpb-pt/run.json")
  /usr/bin/python3 tools/compare_chart.py "${chart[@]}" && echo "chart: $SVG"
fi
if [ -n "${JSON:-}" ]; then
  echo "{\"throughput\": $(cat "$out/throughput.json"), \"val_bpb\": $bpb_json}" |
    /usr/bin/python3 -c "import json,sys; print(json.dumps(json.load(sys.stdin), indent=2))" >"$JSON"
fi
