#!/usr/bin/env bash
# Hostile input, as a user (or another local user) could give it: absurd flags, malformed and
# forged files, inputs that are not regular files, folders that belong to something else, locks
# held by another process, pathological patterns. Every case must end in a clean one-line error
# (exit 1 or 2, the last stderr line matching its pattern) or in correct behaviour, within its
# timeout (no hang), without a crash, and a refused case within 200 MB of peak memory. A forged
# checkpoint is left out with a warning and the run resumes from the one before it.
# usage: hostile_inputs_test.sh NANOTRAIN WORK_DIR
set -u
NT=$(realpath "$1") TMP=$2
rm -rf "$TMP" && mkdir -p "$TMP"
TMP=$(realpath "$TMP")
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
PY=/usr/bin/python3
MAX_KB=$((${NT_HOSTILE_MAX_MB:-200} * 1024))  # sanitizer builds need more (shadow memory)
peak_kb=0  # the largest peak RSS of a refused case, reported at the end

# refused NAME PATTERN CMD...: exit 1 or 2, the last stderr line matches PATTERN, under 200 MB.
refused() {
  local name=$1 pat=$2
  shift 2
  local rc kb last
  timeout 60 /usr/bin/time -f %M -o "$TMP/rss" "$@" </dev/null >/dev/null 2>"$TMP/err"
  rc=$?
  kb=$(tail -n1 "$TMP/rss" 2>/dev/null)
  [ "${kb:-0}" -gt "$peak_kb" ] 2>/dev/null && peak_kb=$kb
  last=$(grep -v '^Command exited with non-zero status' "$TMP/err" | tail -n1)
  if { [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && grep -qE -- "$pat" <<<"$last" && [ "${kb:-0}" -lt $MAX_KB ]; then
    ok "$name"
  else
    bad "$name (rc=$rc, ${kb:-?} KB, last stderr line: $last)"
  fi
}
# skipped NAME PATTERN CMD...: a resume that leaves out a forged checkpoint, saying why on stderr
# ("warning: skipping FILE: PATTERN"), continues from the one before it and exits 0.
skipped() {
  local name=$1 pat=$2
  shift 2
  timeout 120 "$@" </dev/null >/dev/null 2>"$TMP/err"
  local rc=$?
  if [ $rc -eq 0 ] && grep -qE -- "warning: skipping .*step-00000004.safetensors: .*$pat" "$TMP/err"; then
    ok "$name"
  else
    bad "$name (rc=$rc: $(tail -n1 "$TMP/err"))"
  fi
}
# works NAME CMD...: exit 0 within the timeout.
works() {
  local name=$1
  shift
  timeout 120 "$@" </dev/null >/dev/null 2>"$TMP/err"
  local rc=$?
  if [ $rc -eq 0 ]; then ok "$name"; else bad "$name (rc=$rc: $(tail -n1 "$TMP/err"))"; fi
}

# --- a small BPE data folder and a finished run with checkpoints
mkdir -p "$TMP/text"
cp /usr/share/common-licenses/{GPL-3,Apache-2.0,MPL-2.0,Artistic} "$TMP/text/"
"$NT" tokenizer train --input "$TMP/text" --vocab-size 300 --out "$TMP/tok.tiktoken" >/dev/null 2>&1
"$NT" data prepare --quiet --input "$TMP/text" --tokenizer "$TMP/tok.tiktoken" --out "$TMP/data" >/dev/null
RUN=(--data "$TMP/data" --preset tiny --sample-tokens 0 --quiet)
"$NT" train "${RUN[@]}" --steps 4 --save-every 2 --run-dir "$TMP/run" >/dev/null 2>&1
[ -f "$TMP/run/model.safetensors" ] || { echo "setup failed: no finished run"; exit 1; }
T=(train "${RUN[@]}" --steps 1)
TD=(train --preset tiny --sample-tokens 0 --quiet --steps 1)  # with a --data of the case's own
fresh() { mktemp -u -d "$TMP/new.XXXXXX"; }
# hold_lock DIR / release_lock: another process's lock on DIR/.lock, as a second nanotrain would
# hold it (a separate open file, so nanotrain's own flock conflicts with it).
hold_lock() { exec 9>>"$1/.lock" && flock -n 9; }
release_lock() { exec 9>&-; }

# --- flags mean exactly what they say
for d in 0x10m 10mxyz 1e300s 1e3m -5m 1001h 5.m inf "" "5 m" 1m30; do
  refused "--time-budget '$d'" "--time-budget" "$NT" train "${RUN[@]}" --run-dir "$(fresh)" --time-budget "$d"
done
refused "--seed -1" "--seed" "$NT" "${T[@]}" --run-dir "$(fresh)" --seed -1
refused "--seed beyond 64 bits" "--seed" "$NT" "${T[@]}" --run-dir "$(fresh)" --seed 99999999999999999999999
refused "--steps 0" "--steps" "$NT" train "${RUN[@]}" --run-dir "$(fresh)" --steps 0
refused "--steps -3" "--steps" "$NT" train "${RUN[@]}" --run-dir "$(fresh)" --steps -3
for v in -1 100000; do refused "--threads $v" "--threads" "$NT" "${T[@]}" --run-dir "$(fresh)" --threads $v; done
for v in inf nan -1 0x10 1p3; do refused "--peak-gflops $v" "--peak-gflops" "$NT" "${T[@]}" --run-dir "$(fresh)" --peak-gflops $v; done
for v in -1 nan inf; do refused "--lr-matrix $v" "--lr-matrix" "$NT" "${T[@]}" --run-dir "$(fresh)" --lr-matrix $v; done
refused "--lr-embed inf" "--lr-embed" "$NT" "${T[@]}" --run-dir "$(fresh)" --lr-embed inf
refused "--batch-size 0" "--batch-size" "$NT" "${T[@]}" --run-dir "$(fresh)" --batch-size 0
refused "--seq-len 0" "--seq-len" "$NT" "${T[@]}" --run-dir "$(fresh)" --seq-len 0
refused "--seq-len 1e8" "seq-len" "$NT" "${T[@]}" --run-dir "$(fresh)" --seq-len 100000000
refused "--depth 0" "--depth" "$NT" "${T[@]}" --run-dir "$(fresh)" --depth 0
refused "--d-model beyond its range" "d-model" "$NT" "${T[@]}" --run-dir "$(fresh)" --d-model 262144 --n-head 4096
# Memory refusals come from the estimate, before anything is allocated (the 200 MB bound), in one
# line (train here, eval bpb below; tests/train/memory_check_test.cc checks what they count).
refused "a model far beyond memory" "^nanotrain: error: this run needs about .* of memory is available" \
  "$NT" "${T[@]}" --run-dir "$(fresh)" --depth 64 --d-model 65536 --n-head 1024
refused "--eval-every 0x5" "--eval-every" "$NT" "${T[@]}" --run-dir "$(fresh)" --eval-every 0x5
refused "--eval-every -5" "--eval-every" "$NT" "${T[@]}" --run-dir "$(fresh)" --eval-every -5
refused "--save-every 1e400s" "--save-every" "$NT" "${T[@]}" --run-dir "$(fresh)" --save-every 1e400s
refused "--keep-checkpoints 0" "--keep-checkpoints" "$NT" "${T[@]}" --run-dir "$(fresh)" --keep-checkpoints 0
refused "--preset huge" "--preset" "$NT" train --data "$TMP/data" --run-dir "$(fresh)" --preset huge
refused "--device tpu" "--device" "$NT" "${T[@]}" --run-dir "$(fresh)" --device tpu
refused "--warmup-frac 2" "--warmup-frac" "$NT" "${T[@]}" --run-dir "$(fresh)" --warmup-frac 2
refused "--warmdown-frac nan" "--warmdown-frac" "$NT" "${T[@]}" --run-dir "$(fresh)" --warmdown-frac nan
refused "--packing weird" "--packing" "$NT" "${T[@]}" --run-dir "$(fresh)" --packing weird
refused "--on-nan maybe" "--on-nan" "$NT" "${T[@]}" --run-dir "$(fresh)" --on-nan maybe
refused "--eval-tokens -1" "--eval-tokens" "$NT" "${T[@]}" --run-dir "$(fresh)" --eval-tokens -1
refused "--n-kv-head that does not divide" "n-kv-head|n_kv_head" "$NT" "${T[@]}" --run-dir "$(fresh)" --n-kv-head 3
refused "--qk-scale 0" "--qk-scale" "$NT" "${T[@]}" --run-dir "$(fresh)" --qk-scale 0
refused "--softcap -1" "--softcap" "$NT" "${T[@]}" --run-dir "$(fresh)" --softcap -1
refused "--mlp tanh" "--mlp" "$NT" "${T[@]}" --run-dir "$(fresh)" --mlp tanh
refused "--dtype fp8" "--dtype" "$NT" "${T[@]}" --run-dir "$(fresh)" --dtype fp8
refused "--muon-coeffs cubic" "--muon-coeffs" "$NT" "${T[@]}" --run-dir "$(fresh)" --muon-coeffs cubic
refused "--ns-steps 101" "--ns-steps" "$NT" "${T[@]}" --run-dir "$(fresh)" --ns-steps 101
refused "--beta1 1" "--beta1" "$NT" "${T[@]}" --run-dir "$(fresh)" --beta1 1
refused "an unknown flag" "--no-such-flag" "$NT" "${T[@]}" --run-dir "$(fresh)" --no-such-flag
refused "--resume with --overwrite" "--overwrite" "$NT" train --resume "$TMP/run" --overwrite --quiet
refused "--resume of no run" "--resume" "$NT" train --resume "$TMP/nope" --quiet
refused "sample --max-tokens -1" "--max-tokens" "$NT" sample --run-dir "$TMP/run" --max-tokens -1
refused "sample --temperature -1" "--temperature" "$NT" sample --run-dir "$TMP/run" --temperature -1
refused "sample --temperature nan" "--temperature" "$NT" sample --run-dir "$TMP/run" --temperature nan
refused "sample --top-k -1" "--top-k" "$NT" sample --run-dir "$TMP/run" --top-k -1
refused "sample --seed -1" "--seed" "$NT" sample --run-dir "$TMP/run" --seed -1
refused "eval bpb --batch-size 0" "--batch-size" "$NT" eval bpb --run-dir "$TMP/run" --input "$TMP/text" --batch-size 0
refused "eval core --max-per-task -1" "--max-per-task" "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/nope" --max-per-task -1

# --- a run folder belongs to one run
refused "a new run into a finished run" "already holds a run" "$NT" "${T[@]}" --run-dir "$TMP/run"
refused "a run into the data folder" "not empty" "$NT" "${T[@]}" --run-dir "$TMP/data"
refused "a run into the data folder, --overwrite" "not empty" "$NT" "${T[@]}" --run-dir "$TMP/data" --overwrite
echo x >"$TMP/afile"
refused "a run folder that is a file" "not a folder" "$NT" "${T[@]}" --run-dir "$TMP/afile"
mkdir -p "$TMP/linked" && ln -s "$TMP/afile" "$TMP/linked/metrics.jsonl"
refused "a folder with a symlinked metrics.jsonl" "holds a run|not empty" "$NT" "${T[@]}" --run-dir "$TMP/linked"
cp -r "$TMP/run" "$TMP/locked"
hold_lock "$TMP/locked"
refused "a run folder locked by another process" "in use by another nanotrain process" \
  "$NT" train --resume "$TMP/locked" --quiet
release_lock
"$NT" train "${RUN[@]}" --steps 2 --save-every 1 --run-dir "$TMP/other" >/dev/null 2>&1
cp -r "$TMP/run" "$TMP/mixed" && rm -f "$TMP/mixed/checkpoints/"*
cp "$TMP/other/checkpoints/"* "$TMP/mixed/checkpoints/"
refused "resuming another run's checkpoint" "another run|other run|not this run" "$NT" train --resume "$TMP/mixed" --quiet

# --- inputs that are not regular files are refused without blocking
mkfifo "$TMP/fifo"
refused "data prepare --input FIFO" "fifo" "$NT" data prepare --quiet --input "$TMP/fifo" --out "$(fresh)"
refused "eval bpb --input /dev/zero" "/dev/zero" "$NT" eval bpb --run-dir "$TMP/run" --input /dev/zero
refused "data prepare --tokenizer FIFO" "fifo" "$NT" data prepare --quiet --input "$TMP/text" --tokenizer "$TMP/fifo" --out "$(fresh)"
cp -r "$TMP/data" "$TMP/d_fifo" && rm "$TMP/d_fifo/data.json" && mkfifo "$TMP/d_fifo/data.json"
refused "data.json is a FIFO" "data.json" "$NT" "${TD[@]}" --data "$TMP/d_fifo" --run-dir "$(fresh)"
cp -r "$TMP/run" "$TMP/r_dir" && rm "$TMP/r_dir/config.json" && mkdir "$TMP/r_dir/config.json"
refused "config.json is a folder" "config.json" "$NT" eval bpb --run-dir "$TMP/r_dir" --input "$TMP/text"

# --- shards and data folders
shard=$(ls "$TMP"/data/gen-*/train_00000.bin)
gen=$(basename "$(dirname "$shard")")
forge_data() { rm -rf "$TMP/$1" && cp -r "$TMP/data" "$TMP/$1" && echo "$TMP/$1/$gen/train_00000.bin"; }
reseal='import hashlib,sys
p=sys.argv[1]; b=bytearray(open(p,"rb").read())
exec(sys.argv[2])
b[80:112]=hashlib.sha256(bytes(b[:80])+bytes(b[128:])).digest(); open(p,"wb").write(b)'
s=$(forge_data oov) && $PY -c "$reseal" "$s" 'b[128+2*50:128+2*51]=(300).to_bytes(2,"little")'
refused "a token id outside the vocabulary" "token 50 \\(byte offset 228\\) is id 300, outside the vocabulary" "$NT" "${TD[@]}" --data "$TMP/oov" --run-dir "$(fresh)"
s=$(forge_data vocab) && $PY -c "$reseal" "$s" 'b[20:24]=(299).to_bytes(4,"little")'
refused "a resealed header with another vocabulary" "vocabulary 299" "$NT" "${TD[@]}" --data "$TMP/vocab" --run-dir "$(fresh)"
s=$(forge_data hdr) && printf '\x2b' | dd of="$s" bs=1 seek=20 conv=notrunc status=none
refused "a header field changed" "checksum mismatch" "$NT" "${TD[@]}" --data "$TMP/hdr" --run-dir "$(fresh)"
s=$(forge_data flip) && printf '\x01' | dd of="$s" bs=1 seek=500 conv=notrunc status=none
refused "a flipped token byte" "checksum mismatch" "$NT" "${TD[@]}" --data "$TMP/flip" --run-dir "$(fresh)"
s=$(forge_data trunc) && truncate -s -3 "$s"
refused "a truncated shard" "truncated" "$NT" "${TD[@]}" --data "$TMP/trunc" --run-dir "$(fresh)"
s=$(forge_data ver) && printf '\x09' | dd of="$s" bs=1 seek=8 conv=notrunc status=none
refused "a shard of another format version" "version" "$NT" "${TD[@]}" --data "$TMP/ver" --run-dir "$(fresh)"
s=$(forge_data empty) && : >"$s"
refused "an empty shard file" "not a token shard" "$NT" "${TD[@]}" --data "$TMP/empty" --run-dir "$(fresh)"
"$NT" data prepare --quiet --input "$TMP/text" --out "$TMP/bytes_data" >/dev/null
s=$(forge_data foreign) && cp "$(ls "$TMP"/bytes_data/gen-*/val_00000.bin)" "$TMP/foreign/$gen/val_00000.bin"
refused "a shard of another tokenizer" "another tokenizer" "$NT" "${TD[@]}" --data "$TMP/foreign" --run-dir "$(fresh)"
meta() {  # meta NAME PYTHON-STATEMENT-ON-m: a data folder whose data.json was changed
  forge_data "$1" >/dev/null
  $PY -c "import json,sys; p=sys.argv[1]; m=json.load(open(p)); exec(sys.argv[2]); open(p,'w').write(json.dumps(m))" \
    "$TMP/$1/data.json" "$2"
}
meta counts 'm["train_tokens"] += 1'
refused "data.json's token count forged" "data.json: says" "$NT" "${TD[@]}" --data "$TMP/counts" --run-dir "$(fresh)"
meta escape 'm["train_shards"] = ["../../../../etc/passwd"]'
refused "data.json naming a file outside" "not a path inside the data folder" "$NT" "${TD[@]}" --data "$TMP/escape" --run-dir "$(fresh)"
meta absolute 'm["val_shards"] = ["/etc/passwd"]'
refused "data.json naming an absolute path" "not a path inside the data folder" "$NT" "${TD[@]}" --data "$TMP/absolute" --run-dir "$(fresh)"
meta tokpath 'm["tokenizer"] = "../tok.tiktoken"'
refused "data.json's tokenizer outside" "not a path inside the data folder" "$NT" "${TD[@]}" --data "$TMP/tokpath" --run-dir "$(fresh)"
meta v1 'm["version"] = 1'
refused "an older data folder" "re-run .nanotrain data prepare" "$NT" "${TD[@]}" --data "$TMP/v1" --run-dir "$(fresh)"
meta notobj 'm = [m]'
refused "data.json not an object" "data.json" "$NT" "${TD[@]}" --data "$TMP/notobj" --run-dir "$(fresh)"
meta nokey 'del m["train_shards"]'
refused "data.json without its shards" "data.json: malformed" "$NT" "${TD[@]}" --data "$TMP/nokey" --run-dir "$(fresh)"
meta badtype 'm["train_tokens"] = "many"'
refused "data.json with a string count" "data.json: malformed" "$NT" "${TD[@]}" --data "$TMP/badtype" --run-dir "$(fresh)"
forge_data deep >/dev/null && $PY -c "print('['*100000 + ']'*100000)" >"$TMP/deep/data.json"
refused "a deeply nested data.json" "nested more than 64 levels" "$NT" "${TD[@]}" --data "$TMP/deep" --run-dir "$(fresh)"
forge_data huge >/dev/null && $PY -c "print('[' + ' '*(9<<20) + ']')" >"$TMP/huge/data.json"
refused "a 9 MB data.json" "more than the" "$NT" "${TD[@]}" --data "$TMP/huge" --run-dir "$(fresh)"
forge_data gone >/dev/null && rm "$TMP/gone/data.json"
refused "a data folder without data.json" "data.json: missing" "$NT" "${TD[@]}" --data "$TMP/gone" --run-dir "$(fresh)"
mkdir -p "$TMP/mine" && echo mine >"$TMP/mine/notes.txt"
refused "data prepare into somebody's folder" "not empty and not a data folder" "$NT" data prepare --quiet --input "$TMP/text" --out "$TMP/mine"
check "and the folder is left as it was" "[ \"\$(ls '$TMP/mine')\" = notes.txt ]"
refused "data prepare --out a file" "afile" "$NT" data prepare --quiet --input "$TMP/text" --out "$TMP/afile"
cp -r "$TMP/data" "$TMP/dlock"
hold_lock "$TMP/dlock"
refused "data prepare into a folder being prepared" "in use by another nanotrain process" \
  "$NT" data prepare --quiet --input "$TMP/text" --out "$TMP/dlock"
release_lock
works "data prepare again into a data folder (a new generation)" "$NT" data prepare --quiet --input "$TMP/text" --out "$TMP/dlock"
$PY -c "print('{\"text\": ' + '['*1000 + ']'*1000 + '}')" >"$TMP/deep.jsonl"
refused "a JSONL line nested too deep" "deep.jsonl:1: JSON nested" "$NT" data prepare --quiet --input "$TMP/deep.jsonl" --out "$(fresh)"
printf '{"text": "a"}\n{"text": \n' >"$TMP/broken.jsonl"
refused "a malformed JSONL line" "broken.jsonl:2: malformed JSON line" "$NT" data prepare --quiet --input "$TMP/broken.jsonl" --out "$(fresh)"
printf '{"text": 5}\n' >"$TMP/num.jsonl"
refused "a JSONL text that is a number" "num.jsonl:1: record has no string field" "$NT" data prepare --quiet --input "$TMP/num.jsonl" --out "$(fresh)"
printf 'abc\xff\xfe' >"$TMP/bad.txt"
refused "non-UTF-8 text" "bad.txt: not valid UTF-8" "$NT" data prepare --quiet --input "$TMP/bad.txt" --out "$(fresh)"

# --- checkpoints, weights and run files, forged or damaged
forge_ck() {  # forge_ck NAME PYTHON-STATEMENT: a copy of the run whose newest checkpoint's `state` or
  # `train` metadata was changed, and its checksum made right again (as a forger would)
  rm -rf "$TMP/$1" && cp -r "$TMP/run" "$TMP/$1"
  local ck
  ck=$(ls "$TMP/$1/checkpoints/"*.safetensors | tail -n1)
  $PY - "$ck" "$2" <<'EOF'
import hashlib, json, struct, sys
p, stmt = sys.argv[1], sys.argv[2]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
meta = h["__metadata__"]
state, train = json.loads(meta["state"]), json.loads(meta["train"])
exec(stmt)
meta["state"] = json.dumps(state) if not isinstance(state, str) else state
meta["train"] = json.dumps(train)
meta["checksum"] = "0" * 64
hb = json.dumps(h, separators=(",", ":")).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
head = struct.pack("<Q", len(hb))
digest = hashlib.sha256(head + hb + b[8 + n:]).hexdigest().encode()
hb = hb.replace(b'"checksum":"' + b"0" * 64, b'"checksum":"' + digest)
open(p, "wb").write(head + hb + b[8 + n:])
EOF
}
forge_ck ck_huge 'state["step"] = 1e300'
skipped "a checkpoint step of 1e300" "\"step\" is not an integer" "$NT" train --resume "$TMP/ck_huge" --quiet
forge_ck ck_wrap 'state["step"] = 2**64 - 1'
skipped "a checkpoint step of 2^64-1" "step" "$NT" train --resume "$TMP/ck_wrap" --quiet
forge_ck ck_neg 'state["optimizer_steps"] = -4'
skipped "a negative optimizer step count" "optimizer_steps" "$NT" train --resume "$TMP/ck_neg" --quiet
forge_ck ck_lr 'state["lr_scale"] = "nan"'
skipped "a checkpoint lr_scale that is not a number" "lr_scale" "$NT" train --resume "$TMP/ck_lr" --quiet
forge_ck ck_secs 'state["train_seconds"] = -1'
skipped "negative training seconds" "train_seconds" "$NT" train --resume "$TMP/ck_secs" --quiet
forge_ck ck_deep 'state = "[" * 100000 + "]" * 100000'
skipped "a deeply nested checkpoint state" "nested more than 64 levels" "$NT" train --resume "$TMP/ck_deep" --quiet
forge_ck ck_loader 'state["loader"] = {"cursor": 2**40}'
refused "a forged loader position" "loader|cursor|checkpoint" "$NT" train --resume "$TMP/ck_loader" --quiet
cfgfix() {  # cfgfix NAME PYTHON-STATEMENT-ON-c: a copy of the run whose config.json was changed
  rm -rf "$TMP/$1" && cp -r "$TMP/run" "$TMP/$1"
  $PY -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); exec(sys.argv[2]); open(p,'w').write(json.dumps(c))" \
    "$TMP/$1/config.json" "$2"
}
forge_ck ck_wrap32 'train["batch_size"] = 2**32 + 16'
refused "a checkpoint's batch size of 2^32+16" "batch_size.: 4294967312 is not a whole number" "$NT" train --resume "$TMP/ck_wrap32" --quiet
cfgfix cfg_tok 'c["tokenizer"] = "bytes"'
refused "config.json pointing at another tokenizer" "not the one this model was trained with" "$NT" eval bpb --run-dir "$TMP/cfg_tok" --input "$TMP/text"
cfgfix cfg_tokid 'c["tokenizer"] = "bytes"; c["tokenizer_id"] = "0"*64'
refused "config.json's tokenizer id edited too" "not the one this model was trained with" "$NT" sample --run-dir "$TMP/cfg_tokid"
rm -rf "$TMP/cfg_deep" && cp -r "$TMP/run" "$TMP/cfg_deep" && $PY -c "print('['*100000 + ']'*100000)" >"$TMP/cfg_deep/config.json"
refused "a deeply nested config.json" "nested more than" "$NT" eval bpb --run-dir "$TMP/cfg_deep" --input "$TMP/text"
rm -rf "$TMP/w_bad" && cp -r "$TMP/run" "$TMP/w_bad"
size=$(stat -c %s "$TMP/w_bad/model.safetensors")
printf '\x40' | dd of="$TMP/w_bad/model.safetensors" bs=1 seek=$((size - 100)) conv=notrunc status=none
refused "damaged weights" "damaged" "$NT" eval bpb --run-dir "$TMP/w_bad" --input "$TMP/text"
refused "damaged weights, sample" "damaged" "$NT" sample --run-dir "$TMP/w_bad"
rm -rf "$TMP/w_trunc" && cp -r "$TMP/run" "$TMP/w_trunc" && truncate -s -10 "$TMP/w_trunc/model.safetensors"
refused "truncated weights" "model.safetensors" "$NT" sample --run-dir "$TMP/w_trunc"
st_forge() {  # st_forge NAME HEADER-JSON DATA-BYTES: a run whose weights file is this safetensors
  rm -rf "$TMP/$1" && cp -r "$TMP/run" "$TMP/$1"
  $PY -c "import struct,sys; h=sys.argv[1].encode(); open(sys.argv[3],'wb').write(struct.pack('<Q',len(h))+h+bytes(int(sys.argv[2])))" \
    "$2" "$3" "$TMP/$1/model.safetensors"
}
st_forge st_dup '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}' 8
refused "safetensors naming a tensor twice" "twice" "$NT" sample --run-dir "$TMP/st_dup"
st_forge st_overlap '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}' 12
refused "safetensors with overlapping tensors" "overlap" "$NT" sample --run-dir "$TMP/st_overlap"
st_forge st_hole '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}' 8
refused "safetensors with unused bytes" "unused|hole|gap|not covered" "$NT" sample --run-dir "$TMP/st_hole"
st_forge st_shape '{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}' 4
refused "safetensors with an absurd shape" "model.safetensors" "$NT" sample --run-dir "$TMP/st_shape"
rm -rf "$TMP/st_len" && cp -r "$TMP/run" "$TMP/st_len" && printf '\xff\xff\xff\xff\xff\xff\xff\x7f' | dd of="$TMP/st_len/model.safetensors" bs=1 seek=0 conv=notrunc status=none
refused "safetensors with a huge header length" "header length" "$NT" sample --run-dir "$TMP/st_len"
rm -rf "$TMP/big_model" && cp -r "$TMP/run" "$TMP/big_model"
$PY - "$TMP/big_model/model.safetensors" <<'EOF'
import json, struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
c = json.loads(h["__metadata__"]["config"])
c["seq_len"] = 65536 * 64
h["__metadata__"]["config"] = json.dumps(c)
hb = json.dumps(h).encode()
hb += b" " * ((8 - len(hb) % 8) % 8)
open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
EOF
refused "a model whose context needs more memory than there is" "memory|seq_len|seq-len" "$NT" sample --run-dir "$TMP/big_model" --no-kv-cache
refused "eval bpb with a batch beyond memory" "^nanotrain: error: eval bpb: this model needs about .* of memory is available" \
  "$NT" eval bpb --run-dir "$TMP/run" --input "$TMP/text/GPL-3" --batch-size 100000000

# --- tokenizers and patterns
$PY -c "print('a' * 5000 + 'b')" >"$TMP/aaa.txt"
refused "a catastrophically backtracking --pattern" "gave up on this text" \
  "$NT" tokenizer train --input "$TMP/aaa.txt" --vocab-size 300 --out "$TMP/patho.tiktoken" --pattern '(a+)+$'
refused "a --pattern that does not compile" "--pattern" \
  "$NT" tokenizer train --input "$TMP/aaa.txt" --vocab-size 300 --out "$TMP/x.tiktoken" --pattern '(unclosed'
cp "$TMP/tok.tiktoken" "$TMP/garbage.tiktoken" && cp "$TMP/tok.tiktoken.json" "$TMP/garbage.tiktoken.json"
printf 'not base64 at all\n' >>"$TMP/garbage.tiktoken"
refused "a tokenizer file with a malformed line" "garbage.tiktoken:[0-9]+" \
  "$NT" data prepare --quiet --input "$TMP/text" --tokenizer "$TMP/garbage.tiktoken" --out "$(fresh)"
: >"$TMP/empty.tiktoken" && cp "$TMP/tok.tiktoken.json" "$TMP/empty.tiktoken.json"
refused "an empty tokenizer file" "empty.tiktoken" "$NT" data prepare --quiet --input "$TMP/text" --tokenizer "$TMP/empty.tiktoken" --out "$(fresh)"
printf 'YQ== 4000000000\n' >"$TMP/rank.tiktoken" && cp "$TMP/tok.tiktoken.json" "$TMP/rank.tiktoken.json"
refused "a tokenizer rank far beyond its size" "too large" "$NT" data prepare --quiet --input "$TMP/text" --tokenizer "$TMP/rank.tiktoken" --out "$(fresh)"
cp "$TMP/tok.tiktoken" "$TMP/nosidecar.tiktoken"
refused "a tokenizer without its sidecar" "nosidecar.tiktoken" "$NT" data prepare --quiet --input "$TMP/text" --tokenizer "$TMP/nosidecar.tiktoken" --out "$(fresh)"
refused "eval core with no bundle" "nope" "$NT" eval core --run-dir "$TMP/run" --bundle "$TMP/nope"
refused "eval bpb of no run" "nope" "$NT" eval bpb --run-dir "$TMP/nope" --input "$TMP/text"
refused "sample a prompt longer than the context" "--prompt" "$NT" sample --run-dir "$TMP/run" --prompt "$(head -c 20000 /usr/share/common-licenses/GPL-3)"

# --- sweep files in TOML
SWT=(sweep --data "$TMP/data" --preset tiny --dry-run)
$PY -c "print('[grid]\nx = ' + '['*100000 + ']'*100000)" >"$TMP/deep.toml"
refused "a TOML sweep file nested 100000 deep" "deep.toml:2:[0-9]+: not valid TOML" "$NT" "${SWT[@]}" --out "$(fresh)" --file "$TMP/deep.toml"
$PY -c "print('.'.join(['a'] * 1000000) + ' = 1')" >"$TMP/dotted.toml"
refused "a TOML key of a million dotted parts" "dotted.toml:1: a key of more than 64" "$NT" "${SWT[@]}" --out "$(fresh)" --file "$TMP/dotted.toml"
$PY -c "print('seeds = 1\n# ' + 'x' * (9 << 20))" >"$TMP/huge.toml"
refused "a 9 MB TOML sweep file" "huge.toml: .*more than the" "$NT" "${SWT[@]}" --out "$(fresh)" --file "$TMP/huge.toml"
printf 'seeds = "\xff\xfe"\n' >"$TMP/utf.toml"
refused "TOML that is not UTF-8" "utf.toml:1:[0-9]+: not valid TOML" "$NT" "${SWT[@]}" --out "$(fresh)" --file "$TMP/utf.toml"
mkfifo "$TMP/fifo.toml"
refused "a TOML sweep file that is a FIFO" "fifo.toml" "$NT" "${SWT[@]}" --out "$(fresh)" --file "$TMP/fifo.toml"
printf '[grid]\ndepth = [2]\nlr-matrix = [nan]\n' >"$TMP/nan.toml"
refused "a NaN in a TOML grid" "nan.toml:3: nan is not" "$NT" "${SWT[@]}" --out "$(fresh)" --file "$TMP/nan.toml"

# --- and after all that, the good run still works
works "the finished run still samples" "$NT" sample --run-dir "$TMP/run" --max-tokens 8
works "and evaluates" "$NT" eval bpb --run-dir "$TMP/run" --input "$TMP/text/GPL-3"
works "and resumes" "$NT" train --resume "$TMP/run" --quiet
echo "largest peak RSS of a refused case: $((peak_kb / 1024)) MB"
finish
