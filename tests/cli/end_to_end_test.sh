#!/usr/bin/env bash
# End-to-end checks of the nanotrain binary: data -> train under a budget -> summary, sample,
# eval bpb against the independent PyTorch implementation, and one-line errors on bad input.
# usage: end_to_end_test.sh NANOTRAIN SOURCE_DIR WORK_DIR
set -u
NT=$1 SRC=$2 TMP=$3
PY=/usr/bin/python3
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
# expect_error NAME PATTERN CMD...: non-zero exit, exactly one line on stderr matching PATTERN.
json() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

# Real English text that every Debian machine has.
TEXT=/usr/share/common-licenses
"$NT" data prepare --input "$TEXT" --out "$TMP/data" >/dev/null
check "data prepare writes data.json and shards" "[ -f '$TMP/data/data.json' ] && [ -f '$TMP/data/gen-1/train_00000.bin' ]"

# --- a budgeted run
"$NT" train --data "$TMP/data" --preset tiny --time-budget 8s --run-dir "$TMP/run" --sample-tokens 32 \
  >"$TMP/train.out" 2>"$TMP/train.err"
check "train exits 0" "[ $? -eq 0 ]"
for f in config.json metrics.jsonl summary.json model.safetensors loss.svg; do
  check "run folder has $f" "[ -s '$TMP/run/$f' ]"
done
check "loss.svg: the loss curves and the evaluation's val_bpb, well-formed" \
  "$PY -c 'import json, xml.dom.minidom as m; d = m.parse(\"$TMP/run/loss.svg\"); \
s = json.load(open(\"$TMP/run/summary.json\")); \
assert len(d.getElementsByTagName(\"polyline\")) == 2; \
texts = [t.firstChild.data for t in d.getElementsByTagName(\"text\") if t.firstChild]; \
assert \"val_bpb %.4f\" % s[\"val_bpb\"] in texts, texts'"
for k in val_bpb train_seconds steps tokens_trained params_total params_matmul tokens_per_second mfu threads \
  preset budget_overshoot_seconds; do
  check "summary has $k" "json '$TMP/run/summary.json' \"['$k']\" >/dev/null 2>&1"
done
# MFU is against a peak measured on this machine, for the run's dtype, unless --peak-gflops says.
src=$(json "$TMP/run/summary.json" "['peak_source']")
check "the MFU's peak was measured here ($src)" "$PY -c 'import json,sys; s=json.load(open(\"$TMP/run/summary.json\")); sys.exit(not (s[\"peak_source\"].startswith(\"measured now: \") and s[\"peak_gflops\"] > 1))'"
bpb=$(json "$TMP/run/summary.json" "['val_bpb']")
check "val_bpb after 8s on real text is far below 8 (got $bpb)" "$PY -c 'import sys; sys.exit(not (0 < $bpb < 4.0))'"
over=$(json "$TMP/run/summary.json" "['budget_overshoot_seconds']")
# "One step": the longest step of the run (a shared machine makes single steps vary).
step=$($PY -c "import json; print(max(json.loads(l)['step_seconds'] for l in open('$TMP/run/metrics.jsonl') if '\"step_seconds\"' in l))")
check "budget overshoot $over s is under one step ($step s)" "$PY -c 'import sys; sys.exit(not (abs($over) < $step))'"
check "progress lines were printed" "grep -q 'step 1 ' '$TMP/train.err'"
check "a sample was printed" "grep -q '^sample: ' '$TMP/train.out'"

# --- sampling: KV cache and full recompute agree at temperature 0
a=$("$NT" sample --run-dir "$TMP/run" --prompt "The " --max-tokens 24 --temperature 0)
b=$("$NT" sample --run-dir "$TMP/run" --prompt "The " --max-tokens 24 --temperature 0 --no-kv-cache)
check "sample with and without the KV cache agree" "[ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]"

# --- eval bpb agrees with the independent PyTorch model loading the same safetensors file
DOC="$TEXT/Apache-2.0"   # one document (< 16 KiB is never cut)
"$NT" eval bpb --run-dir "$TMP/run" --input "$DOC" --json >"$TMP/eval.json"
$PY - "$DOC" "$TMP/tokens.safetensors" <<PYEOF
import sys; sys.path.insert(0, "$SRC/tools/torch_ref")
import torch; from st import write_safetensors
data = open(sys.argv[1], "rb").read()
write_safetensors(sys.argv[2], {"tokens": torch.tensor([256] + list(data), dtype=torch.int32)})
PYEOF
$PY "$SRC/tools/torch_ref/eval_loss.py" --weights "$TMP/run/model.safetensors" --tokens "$TMP/tokens.safetensors" \
  --dtype float64 --ignore-target 256 >"$TMP/torch_eval.json"
check "eval bpb loss matches PyTorch on the same text" "$PY -c '
import json; a = json.load(open(\"$TMP/eval.json\")); b = json.load(open(\"$TMP/torch_eval.json\"))
assert a[\"targets\"] == b[\"targets\"], (a, b)
assert abs(a[\"loss\"] / b[\"loss\"] - 1) < 1e-5, (a, b)'"

# --- the PyTorch side of tools/compare_pytorch.sh's val_bpb comparison: trains on the same
# shards for a budget, and nanotrain's eval bpb reads the weights it writes
V=$(json "$TMP/run/config.json" "['model']['vocab_size']")
mkdir -p "$TMP/ptrun" && cp "$TMP/run/config.json" "$TMP/ptrun/"
$PY "$SRC/tools/torch_ref/train_bench.py" --depth 2 --d-model 64 --n-head 2 --head-dim 32 --seq-len 64 \
  --vocab-size "$V" --batch-size 4 --shards "$TMP/data" --time-budget 3 \
  --save-weights "$TMP/ptrun/model.safetensors" >"$TMP/pt.json"
check "PyTorch budgeted run exits 0" "[ $? -eq 0 ]"
# Within its last iteration of the budget (the rule's bound: a loaded machine can make one
# iteration far longer than the median, so a fixed margin would be flaky).
check "PyTorch run stops within its 3 s budget (overrun under its last iteration)" \
  "$PY -c 'import json; r = json.load(open(\"$TMP/pt.json\")); assert r[\"steps\"] > 2 and r[\"train_seconds\"] <= 3 + r[\"last_iteration_seconds\"] + 0.05, r'"
"$NT" eval bpb --run-dir "$TMP/ptrun" --input "$DOC" --json >"$TMP/pt_eval.json"
check "nanotrain eval bpb scores the PyTorch-trained weights below uniform" \
  "$PY -c 'import json, math; a = json.load(open(\"$TMP/pt_eval.json\")); assert 0 < a[\"loss\"] < math.log($V), a'"
expect_error "train_bench.py without a data folder" "nope/data.json" $PY "$SRC/tools/torch_ref/train_bench.py" \
  --depth 2 --d-model 64 --n-head 2 --head-dim 32 --seq-len 64 --vocab-size "$V" --batch-size 4 --shards "$TMP/nope"
# compare_pytorch.sh's picture from the two runs' outputs: the throughput bars and both loss curves
cat >"$TMP/throughput.json" <<'JSON'
[{"model": "tiny", "seq_len": 64, "batch_size": 4, "pytorch_fp32": 100, "pytorch_bf16": 150,
  "nanotrain": 450, "nanotrain_dtype": "bf16", "ratio": 3.0}]
JSON
echo '{"budget_seconds": 3, "pytorch": {"dtype": "fp32", "steps": 5, "val_bpb": 2.5},
  "nanotrain": {"dtype": "bf16", "steps": 9, "val_bpb": 2.0}}' >"$TMP/bpb.json"
$PY "$SRC/tools/compare_chart.py" --throughput "$TMP/throughput.json" --bpb "$TMP/bpb.json" \
  --nt-metrics "$TMP/run/metrics.jsonl" --pt-run "$TMP/pt.json" --out "$TMP/compare.svg"
check "compare_chart.py: 3 bars, the ratio, both loss curves with every step" \
  "$PY -c 'import json, xml.dom.minidom as m; d = m.parse(\"$TMP/compare.svg\"); \
bars = [r for r in d.getElementsByTagName(\"rect\") if r.getAttribute(\"class\") == \"bar\"]; \
lines = {p.getAttribute(\"class\"): len(p.getAttribute(\"points\").split()) for p in d.getElementsByTagName(\"polyline\")}; \
texts = [t.firstChild.data for t in d.getElementsByTagName(\"text\") if t.firstChild]; \
pt = json.load(open(\"$TMP/pt.json\")); nt = sum(json.loads(l).get(\"type\") == \"step\" for l in open(\"$TMP/run/metrics.jsonl\")); \
assert len(bars) == 6 and \"3.00x\" in texts, (len(bars), texts); \
assert lines == {\"pytorch\": pt[\"steps\"], \"nanotrain\": nt}, (lines, pt[\"steps\"], nt)'"
expect_error "compare_chart.py: a missing input" "nope.json" $PY "$SRC/tools/compare_chart.py" \
  --throughput "$TMP/nope.json" --out "$TMP/c.svg"

# --- step-count runs are deterministic
"$NT" train --data "$TMP/data" --preset tiny --steps 4 --run-dir "$TMP/s1" --sample-tokens 0 --quiet >/dev/null
"$NT" train --data "$TMP/data" --preset tiny --steps 4 --run-dir "$TMP/s2" --sample-tokens 0 --quiet \
  --peak-gflops 1234 --profile >/dev/null
check "same seed, same threads: identical losses" \
  "[ -s '$TMP/s1/metrics.jsonl' ] && [ \"\$(grep -o '\"loss\":[^,]*' '$TMP/s1/metrics.jsonl')\" = \"\$(grep -o '\"loss\":[^,]*' '$TMP/s2/metrics.jsonl')\" ]"
check "--steps 4 ran 4 steps" "[ \"\$(json '$TMP/s1/summary.json' \"['steps']\")\" = 4 ]"
check "--profile: a Chrome trace and the profile's chart in the run folder (and the same losses)" \
  "$PY -c 'import json, xml.dom.minidom as m; t = json.load(open(\"$TMP/s2/trace.json\")); \
assert any(e.get(\"name\") == \"step\" for e in t[\"traceEvents\"]); \
d = m.parse(\"$TMP/s2/profile.svg\"); \
bars = [r.getElementsByTagName(\"title\")[0].firstChild.data for r in d.getElementsByTagName(\"rect\") \
if r.getElementsByTagName(\"title\")]; \
assert any(b.startswith(\"forward: \") for b in bars) and any(b.startswith(\"optimizer: \") for b in bars), bars'"
check "--peak-gflops is the MFU's peak" \
  "[ \"\$(json '$TMP/s2/summary.json' \"['peak_source']\")\" = --peak-gflops ] && [ \"\$(json '$TMP/s2/summary.json' \"['peak_gflops']\")\" = 1234.0 ]"

# --- the model variants, all on: config.json names them, a resume from a checkpoint ends where the
# straight run does, the KV-cache sampler agrees with the recompute, eval bpb agrees with PyTorch
VARIANTS="--qk-scale 1.2 --softcap 0 --mlp gelu --tie-embeddings --resid-scalars --smear --backout --value-embeds \
  --window-pattern S --short-window 20"
"$NT" train --data "$TMP/data" --preset tiny --steps 8 --dtype fp32 --save-every 4 --run-dir "$TMP/v1" \
  --sample-tokens 0 --quiet $VARIANTS >/dev/null
check "variants: config.json records them" "$PY -c 'import json; m = json.load(open(\"$TMP/v1/config.json\"))[\"model\"]; \
assert m[\"mlp\"] == \"gelu\" and m[\"qk_scale\"] == 1.2 and m[\"softcap\"] == 0 and m[\"tie_embeddings\"] and \
m[\"resid_scalars\"] and m[\"smear\"] and m[\"backout\"] and m[\"value_embeds\"] and \
m[\"window_pattern\"] == \"S\" and m[\"short_window\"] == 20, m'"
cp -r "$TMP/v1" "$TMP/v2" && rm "$TMP/v2/checkpoints/step-00000008.safetensors" "$TMP/v2/summary.json"
"$NT" train --resume "$TMP/v2" --quiet >/dev/null 2>&1
check "variants: resumed from step 4, the same final loss" \
  "[ \"\$(json '$TMP/v1/summary.json' \"['val_bpb']\")\" = \"\$(json '$TMP/v2/summary.json' \"['val_bpb']\")\" ]"
a=$("$NT" sample --run-dir "$TMP/v1" --prompt "The " --max-tokens 24 --temperature 0)
b=$("$NT" sample --run-dir "$TMP/v1" --prompt "The " --max-tokens 24 --temperature 0 --no-kv-cache)
check "variants: sample with and without the KV cache agree" "[ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]"
"$NT" eval bpb --run-dir "$TMP/v1" --input "$DOC" --json >"$TMP/v_eval.json"
$PY "$SRC/tools/torch_ref/eval_loss.py" --weights "$TMP/v1/model.safetensors" --tokens "$TMP/tokens.safetensors" \
  --dtype float64 --ignore-target 256 >"$TMP/v_torch_eval.json"
check "variants: eval bpb loss matches PyTorch on the same text" "$PY -c '
import json; a = json.load(open(\"$TMP/v_eval.json\")); b = json.load(open(\"$TMP/v_torch_eval.json\"))
assert abs(a[\"loss\"] / b[\"loss\"] - 1) < 1e-5, (a, b)'"
# ... and in bf16, with each MLP activation: the first steps' losses those of fp32 (these settings
# diverge after a few steps in either precision), a resume ends where the straight run does, and
# the KV-cache sampler agrees with the recompute.
for mlp in gelu swiglu; do
  "$NT" train --data "$TMP/data" --preset tiny --steps 8 --dtype bf16 --save-every 4 --run-dir "$TMP/vbf_$mlp" \
    --sample-tokens 0 --quiet ${VARIANTS/--mlp gelu/--mlp $mlp} >/dev/null 2>&1
  "$NT" train --data "$TMP/data" --preset tiny --steps 2 --dtype fp32 --run-dir "$TMP/vf_$mlp" \
    --sample-tokens 0 --quiet ${VARIANTS/--mlp gelu/--mlp $mlp} >/dev/null 2>&1
  check "variants in bf16 ($mlp): 8 finite losses, the first two within 1 % of fp32's" "$PY - '$TMP/vbf_$mlp' '$TMP/vf_$mlp' <<'PY'
import json, math, sys
def losses(d):
    return [j['loss'] for j in map(json.loads, open(d + '/metrics.jsonl')) if j.get('type') == 'step']
b, f = losses(sys.argv[1]), losses(sys.argv[2])
assert json.load(open(sys.argv[1] + '/config.json'))['flags']['dtype'] == 'bf16'
assert len(b) == 8 and all(math.isfinite(x) for x in b), b
assert len(f) == 2 and all(abs(x / y - 1) < 0.01 for x, y in zip(b, f)), (b[:2], f)
PY"
  cp -r "$TMP/vbf_$mlp" "$TMP/vbf2_$mlp" && rm "$TMP/vbf2_$mlp/checkpoints/step-00000008.safetensors" "$TMP/vbf2_$mlp/summary.json"
  "$NT" train --resume "$TMP/vbf2_$mlp" --quiet >/dev/null 2>&1
  check "variants in bf16 ($mlp): resumed from step 4, the same val_bpb" \
    "[ \"\$(json '$TMP/vbf_$mlp/summary.json' \"['val_bpb']\")\" = \"\$(json '$TMP/vbf2_$mlp/summary.json' \"['val_bpb']\")\" ]"
  a=$("$NT" sample --run-dir "$TMP/vbf_$mlp" --prompt "The " --max-tokens 24 --temperature 0 2>&1)
  b=$("$NT" sample --run-dir "$TMP/vbf_$mlp" --prompt "The " --max-tokens 24 --temperature 0 --no-kv-cache 2>&1)
  check "variants in bf16 ($mlp): sample with and without the KV cache agree" "[ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]"
done

# --- bad input: one line naming the flag or file, non-zero exit
expect_error "unknown flag" "--no-such-flag" "$NT" train --no-such-flag
expect_error "negative budget" "--time-budget -5m" "$NT" train --data "$TMP/data" --time-budget -5m
expect_error "negative batch" "--batch-size: -3: must be positive" "$NT" train --data "$TMP/data" --batch-size -3
expect_error "head dim not dividing d_model" "head-dim|d_model" "$NT" train --data "$TMP/data" --d-model 100 --head-dim 64
expect_error "kv heads not dividing heads" "--n-kv-head 3" "$NT" train --data "$TMP/data" --preset tiny --n-kv-head 3
expect_error "unknown preset" "--preset huge" "$NT" train --data "$TMP/data" --preset huge
expect_error "bad window pattern" "--window-pattern SXL" "$NT" train --data "$TMP/data" --preset tiny --window-pattern SXL
expect_error "empty window pattern" "--window-pattern" "$NT" train --data "$TMP/data" --preset tiny --window-pattern ""
expect_error "unknown device" "--device tpu" "$NT" train --data "$TMP/data" --device tpu
expect_error "missing data folder" "--data $TMP/nope" "$NT" train --data "$TMP/nope"
expect_error "zero batch" "--batch-size" "$NT" train --data "$TMP/data" --batch-size 0
expect_error "zero sequence length" "--seq-len" "$NT" train --data "$TMP/data" --seq-len 0
expect_error "sequence beyond the model's range" "seq-len 100000000" "$NT" train --data "$TMP/data" --preset tiny --seq-len 100000000
cp -r "$TMP/data" "$TMP/version"
printf '\x07' | dd of="$TMP/version/gen-1/train_00000.bin" bs=1 seek=8 conv=notrunc status=none
expect_error "wrong-version shard" "train_00000.bin: .*version" "$NT" train --data "$TMP/version" --preset tiny --steps 1
cp -r "$TMP/data" "$TMP/trunc"
truncate -s -7 "$TMP/trunc/gen-1/train_00000.bin"
expect_error "truncated shard" "train_00000.bin: truncated" "$NT" train --data "$TMP/trunc" --preset tiny --steps 1
cp -r "$TMP/data" "$TMP/flip"
printf '\x01' | dd of="$TMP/flip/gen-1/val_00000.bin" bs=1 seek=200 conv=notrunc status=none
expect_error "corrupted shard" "val_00000.bin: corrupt shard" "$NT" train --data "$TMP/flip" --preset tiny --steps 1
printf 'abc\xff\xfe' >"$TMP/bad.txt"
expect_error "non-UTF-8 text" "bad.txt: not valid UTF-8" "$NT" eval bpb --run-dir "$TMP/run" --input "$TMP/bad.txt"
printf '{"text": "ok"}\n{"text": \n' >"$TMP/bad.jsonl"
expect_error "malformed JSONL line" "bad.jsonl:2: malformed JSON" "$NT" data prepare --input "$TMP/bad.jsonl" --out "$TMP/x"
expect_error "run folder without weights" "model.safetensors: missing" "$NT" sample --run-dir "$TMP/data"
head -c 100 "$TMP/run/model.safetensors" >"$TMP/cut.safetensors"
mkdir -p "$TMP/cutrun" && cp "$TMP/run/config.json" "$TMP/cutrun/" && cp "$TMP/cut.safetensors" "$TMP/cutrun/model.safetensors"
expect_error "truncated weights" "model.safetensors: corrupt" "$NT" sample --run-dir "$TMP/cutrun"
# --- bench: a quick run of every kernel and both step dtypes, its JSON, and flag errors before
# any measuring
"$NT" bench --quick --configs cpu --batch-size 1 --steps 1 --dtype fp32,bf16 --json "$TMP/bench.json" \
  --roofline "$TMP/roofline.svg" >"$TMP/bench.out" 2>&1
check "bench --quick exits 0" "[ $? -eq 0 ]"
check "bench roofline: an SVG with a marker per kernel row that computes" \
  "$PY -c 'import json, xml.dom.minidom as m; b = json.load(open(\"$TMP/bench.json\")); \
d = m.parse(\"$TMP/roofline.svg\"); \
n = sum(1 for c in d.getElementsByTagName(\"circle\") if c.getAttribute(\"class\") == \"kernel\"); \
rows = [k for k in b[\"kernels\"] if not k[\"kernel\"].startswith(\" \") and k[\"gflop\"] > 0]; \
assert n == len(rows) > 20, (n, len(rows))'"
check "bench JSON: peaks, positive rates for every kernel, tokens/s for both dtypes" \
  "$PY -c 'import json, math; b = json.load(open(\"$TMP/bench.json\")); \
assert b[\"peaks\"][\"fp32_fma_gflops\"] > 0 and len(b[\"kernels\"]) > 20, b; \
assert all(math.isfinite(k.get(\"gflops\", k.get(\"gbs\", 0))) and k.get(\"gflops\", k.get(\"gbs\", 0)) > 0 \
for k in b[\"kernels\"]), b[\"kernels\"]; \
assert sorted(s[\"dtype\"] for s in b[\"steps\"]) == [\"bf16\", \"fp32\"], b[\"steps\"]; \
assert all(s[\"tokens_per_second\"] > 0 and 0 < s[\"mfu\"] for s in b[\"steps\"]), b[\"steps\"]; \
assert all(k[\"bound\"] in (\"compute\", \"memory\") and k[\"pct_roof\"] > 0 for k in b[\"kernels\"])'"
# Left at 0, --batch-size means 8,192 tokens a step (tools/compare_pytorch.sh's): 32 sequences at T 256.
"$NT" bench --quick --no-kernels --configs cpu --steps 1 --dtype bf16 --json "$TMP/bench_default.json" \
  >"$TMP/bench_default.out" 2>&1
check "bench: 8,192 tokens a step by default" \
  "$PY -c 'import json; b = json.load(open(\"$TMP/bench_default.json\")); \
assert [s[\"batch\"] for s in b[\"steps\"]] == [32], b[\"steps\"]'"
expect_error "bench: a negative batch" "--batch-size -1: must be positive" "$NT" bench --batch-size -1
expect_error "bench: unknown model" "--configs tiny: unknown" "$NT" bench --configs tiny
expect_error "bench: unknown dtype" "--dtype fp16: unknown" "$NT" bench --dtype fp16
expect_error "bench: JSON into a missing folder" "--json $TMP/nope/b.json: no folder" "$NT" bench --json "$TMP/nope/b.json"
expect_error "bench: roofline into a missing folder" "--roofline $TMP/nope/r.svg: no folder" "$NT" bench \
  --roofline "$TMP/nope/r.svg"
expect_error "bench: roofline without the kernels" "needs the kernel table" "$NT" bench --no-kernels \
  --roofline "$TMP/r.svg"

for cmd in train sample "eval bpb" "data prepare" info bench; do
  check "--help on '$cmd'" "$NT $cmd --help >/dev/null 2>&1"
done

finish
