#!/usr/bin/env bash
# Regenerates the seed corpora in tests/fuzz/corpus/ from files the project itself makes
# (a small BPE tokenizer, shards, weights, a config), plus a few malformed variants.
# Usage: tests/fuzz/make_corpus.sh [path/to/nanotrain]   (default: build/nanotrain)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${1:-build/nanotrain}")
out=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"/{shard_header,safetensors,checkpoint,tokenizer,documents,config,duration,cli,text,core_bundle}

# Input text: a few documents, JSONL and plain.
mkdir -p "$tmp/in"
for i in 1 2 3 4 5 6; do
  printf 'Document %d: The quick brown fox jumps over the lazy dog. déjà vu, 東京, 😀 %d\n\nSecond paragraph %d.\n' "$i" "$i" "$i" >"$tmp/in/doc$i.txt"
done
printf '{"text": "hello world"}\n{"text": "caf\\u00e9 \\ud83d\\ude00"}\n\n{"text": "third", "id": 3}\r\n' >"$tmp/in/docs.jsonl"

# Tokenizer (.tiktoken + sidecar), input "TIKTOKEN\0SIDECAR"; and an encoder-JSON form.
"$bin" tokenizer train --input "$tmp/in" --vocab-size 300 --out "$tmp/tok.tiktoken" >/dev/null
{ cat "$tmp/tok.tiktoken"; printf '\0'; cat "$tmp/tok.tiktoken.json"; } >"$out/tokenizer/valid_tiktoken"
python3 - "$tmp/tok.tiktoken" "$tmp/tok.tiktoken.json" "$out/tokenizer" <<'PY'
import json, sys
tik, side, out = sys.argv[1:4]
ranks = open(tik).read()
meta = json.load(open(side))
enc = {"pat_str": meta["pattern"], "special_tokens": meta["special_tokens"], "bpe_ranks": ranks}
open(out + "/valid_encoder_json", "w").write(json.dumps(enc))
# The npm package's compressed form: "! OFFSET B64 B64 ...".
lines = [l.split() for l in ranks.splitlines()]
comp = "! 0 " + " ".join(b for b, _ in lines)
open(out + "/valid_encoder_compressed", "w").write(json.dumps(dict(enc, bpe_ranks=comp)))
# Malformed: changed .tiktoken (sidecar checksum), duplicate rank, bad base64, huge rank / id.
side_text = open(side).read()
open(out + "/bad_checksum", "w").write(ranks.replace("IA== ", "IQ== ", 1) + "\0" + side_text)
open(out + "/dup_rank", "w").write(ranks + "QUJD 5\n\0" + side_text)
open(out + "/bad_base64", "w").write("@@@@ 0\n\0" + side_text)
open(out + "/huge_rank", "w").write(json.dumps(dict(enc, bpe_ranks=ranks + "QUJDRA== 2147483646\n")))
sp = dict(meta["special_tokens"]); sp["<|x|>"] = 4294967295
open(out + "/huge_special", "w").write(json.dumps(dict(enc, special_tokens=sp)))
bad = dict(meta); del bad["tiktoken_sha256"]; bad["vocab_size"] = 1e300; bad["pattern"] = "(a+)+$"
open(out + "/bad_sidecar", "w").write(ranks + "\0" + json.dumps(bad))
PY

# Shards: a real one (bytes tokenizer) and variants.
"$bin" data prepare --input "$tmp/in" --out "$tmp/data" --quiet >/dev/null
shard=$(ls "$tmp"/data/*.bin | head -1)
head -c 1200 "$shard" >"$tmp/s" && cp "$tmp/s" "$out/shard_header/valid_prefix"  # header + some tokens
cp "$shard" "$out/shard_header/valid" 2>/dev/null || true
python3 - "$out/shard_header" <<'PY'
import struct, sys, os
out = sys.argv[1]
h = bytearray(open(out + "/valid", "rb").read())
if len(h) > 4096:  # keep seeds small: rewrite as a short but consistent shard
    n = 64
    h = h[:128 + 2 * n]; h[32:40] = struct.pack("<Q", n); h[40:48] = struct.pack("<Q", 1)
    open(out + "/valid", "wb").write(h)
def put(name, b): open(out + "/" + name, "wb").write(bytes(b))
b = bytearray(h); b[0] = ord("X"); put("bad_magic", b)
b = bytearray(h); b[8:12] = struct.pack("<I", 2); put("bad_version", b)
b = bytearray(h); b[32:40] = struct.pack("<Q", 2**63 - 1); put("huge_count", b)
b = bytearray(h); b[16:20] = struct.pack("<I", 4); put("width4", b)
put("truncated", h[:100])
os.remove(out + "/valid_prefix")
PY

# Weights (safetensors) from a 2-step tiny run; config.json from the run folder.
# Runs start inside $tmp so that the files record relative paths only.
(cd "$tmp" && "$bin" train --data data --preset tiny --steps 2 --eval-tokens 64 --sample-tokens 0 --threads 1 \
  --run-dir run --quiet >/dev/null)
python3 - "$tmp/run" "$out" <<'PY'
import json, struct, sys
run, out = sys.argv[1:3]
cfg = json.load(open(run + "/config.json"))
model = cfg.get("model", cfg)
open(out + "/config/valid", "w").write(json.dumps(model))
open(out + "/config/run_folder_config", "w").write(json.dumps(cfg))
open(out + "/config/float_depth", "w").write(json.dumps(dict(model, depth=1e30)))
open(out + "/config/bad_heads", "w").write(json.dumps(dict(model, n_head=3)))
open(out + "/config/flags_bytes", "wb").write(struct.pack("<8id", 0, 3, 0, 0, 0, 64, 128, 300, 500.0))
# A small safetensors file made like save_safetensors: the real header with tiny tensors.
raw = open(run + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
meta = hdr.get("__metadata__", {})
def st(tensors, meta, pad=True):
    h = {"__metadata__": meta} if meta else {}
    off = 0; data = b""
    for name, (dt, shape, b) in tensors.items():
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}; off += len(b); data += b
    s = json.dumps(h).encode()
    while pad and len(s) % 8: s += b" "
    return struct.pack("<Q", len(s)) + s + data
f32 = struct.pack("<6f", *range(6))
open(out + "/safetensors/valid", "wb").write(st({"wte": ("F32", [2, 3], f32), "step": ("I32", [1], b"\1\0\0\0")}, meta))
open(out + "/safetensors/f64", "wb").write(st({"x": ("F64", [2], struct.pack("<2d", 1, 2))}, {}))
open(out + "/safetensors/bad_shape", "wb").write(st({"wte": ("F32", [4, 3], f32)}, meta))
open(out + "/safetensors/bad_dtype", "wb").write(st({"wte": ("U8", [6], f32[:6])}, {}))
open(out + "/safetensors/huge_len", "wb").write(struct.pack("<Q", 2**63) + b"{}")
open(out + "/safetensors/truncated", "wb").write(st({"wte": ("F32", [2, 3], f32)}, meta)[:-5])
PY

# Checkpoints: a real one from a 1-layer, 16-wide model (small enough to mutate quickly), a
# truncated one, and one whose state has an impossible step (its checksum is then corrected by
# the target itself).
(cd "$tmp" && "$bin" train --data data --preset tiny --depth 1 --d-model 16 --n-head 1 --n-kv-head 1 \
  --head-dim 16 --seq-len 16 --batch-size 2 --steps 2 --eval-tokens 32 --sample-tokens 0 --threads 1 --run-dir ck \
  --quiet >/dev/null)
ck=$(ls "$tmp"/ck/checkpoints/step-*.safetensors | head -1)
cp "$ck" "$out/checkpoint/valid"
head -c 300 "$ck" >"$out/checkpoint/truncated"
sed 's/\\"step\\":2,/\\"step\\":-2/' "$ck" >"$out/checkpoint/negative_step"

# Documents: mode byte (bit 0 = JSONL, bits 1.. = cut size) + file bytes.
{ printf '\x01'; cat "$tmp/in/docs.jsonl"; } >"$out/documents/jsonl"
{ printf '\x10'; cat "$tmp/in/doc1.txt" "$tmp/in/doc2.txt"; } >"$out/documents/text_cut8"
{ printf '\x01'; printf '{"text": 5}\n{"nope": "x"}\n'; } >"$out/documents/jsonl_bad_field"
{ printf '\x01'; printf '{"text": "a\\udc00b"}\n'; } >"$out/documents/jsonl_lone_surrogate"
{ printf '\x00'; printf 'ok \xc0\xaf overlong'; } >"$out/documents/text_bad_utf8"

# Durations and flags.
for d in 90s 5m 1.5h 1h30m 250ms 300 -5m 1e400 0 5x; do printf '%s' "$d" >"$out/duration/$d"; done
printf 'train\0--preset\0tiny\0--steps\0-3\0--time-budget\0-5m' >"$out/cli/train_bad"
printf 'train\0--depth\0999999999\0--seq-len\0100000000\0--threads\00' >"$out/cli/train_big"
printf 'data\0prepare\0--input\0x\0--out\0y\0--val-frac\01.5' >"$out/cli/data_prepare"
printf 'tokenizer\0encode\0--tokenizer\0bytes\0--text\0hi' >"$out/cli/tokenizer_encode"
printf 'sample\0--run-dir\0r\0--tokens\0-1\0--temperature\0nan' >"$out/cli/sample"
printf 'eval\0--help' >"$out/cli/help"
printf 'eval\0core\0--run-dir\0r\0--bundle\0b\0--max-per-task\0-1\0--scorer\0fast\0--tasks\0a,,b' >"$out/cli/eval_core"
printf 'bench\0--kernel-cases\0--quick\0--case-tables\0cpu-avx2,,ref\0--case-filter\0attention_bwd\0--threads\0-1' >"$out/cli/bench_cases"

# CORE bundle parts: one mode byte (0 core.yaml, 1 eval_meta_data.csv, 2-4 JSONL of multiple
# choice, schema, language modeling), then the file.
printf '\000icl_tasks:\n- label: a\n  dataset_uri: x/a.jsonl\n  num_fewshot: [3]\n  icl_task_type: schema\n  continuation_delimiter: "\\n"\n' >"$out/core_bundle/yaml"
printf '\001Category,Eval Task,Random baseline\nx,a,25\n"y, z",b,9.1\n' >"$out/core_bundle/csv"
printf '\002{"query": "Q", "choices": ["a", "ab", "b"], "gold": 1}\n{"query": " Q2 ", "choices": ["c"], "gold": 0}\n' >"$out/core_bundle/mc"
printf '\003{"context_options": ["he", "she"], "continuation": "ran.", "gold": 0}\n' >"$out/core_bundle/schema"
printf '\004{"context": " \\u00a0The end ", "continuation": "is near"}\n{"context": "x", "continuation": ""}\n' >"$out/core_bundle/lm"

# Text: valid and invalid UTF-8.
cp "$tmp/in/doc1.txt" "$out/text/utf8"
printf 'a\xed\xa0\x80b\xf4\x90\x80\x80c\xe2\x82' >"$out/text/invalid"
printf '    \t\r\n\n123456 lots   of  spaces!!!' >"$out/text/spaces"
echo "seed corpora written to $out"
