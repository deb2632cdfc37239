#!/usr/bin/env bash
# `train --tensorboard` end to end: the event files of a real run read back by an independent
# decoder (tools/tensorboard_ref/check_events.py: CRCs, framing, tags, steps, values against
# metrics.jsonl); a run killed (SIGKILL) and resumed shows every step once, also when the killed
# writer left half a record; the flag passes through a sweep; sweep files in TOML plan the same
# runs as the equivalent JSON, and bad TOML is a one-line error naming the file and line.
# usage: tensorboard_test.sh NANOTRAIN SOURCE_DIR WORK_DIR
set -u
NT=$1 SRC=$2 TMP=$3
rm -rf "$TMP" && mkdir -p "$TMP"
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
PY=/usr/bin/python3
events() { "$PY" "$SRC/tools/tensorboard_ref/check_events.py" "$@"; }

"$NT" data prepare --quiet --input /usr/share/common-licenses --out "$TMP/data" >/dev/null 2>&1
RUN=(--data "$TMP/data" --preset tiny --sample-tokens 0 --threads 1 --quiet --eval-tokens 2048)

# A short run, with evaluations between steps.
"$NT" train "${RUN[@]}" --steps 12 --eval-every 5 --tensorboard --run-dir "$TMP/short" >/dev/null 2>&1
check "a --tensorboard run writes one event file" "[ \$(ls '$TMP/short/tensorboard' | grep -c tfevents) -eq 1 ]"
check "its events match metrics.jsonl (decoded independently)" "events '$TMP/short' >'$TMP/short.out'"
check "training loss, val_bpb, lr, tokens/s and MFU are among the tags" \
  "grep -q 'train/loss' '$TMP/short.out' && grep -q 'eval/val_bpb' '$TMP/short.out' && grep -q 'train/lr_mult' '$TMP/short.out' && grep -q 'train/tokens_per_second' '$TMP/short.out' && grep -q 'train/mfu' '$TMP/short.out'"
"$NT" train "${RUN[@]}" --steps 3 --run-dir "$TMP/plain" >/dev/null 2>&1
check "without the flag there is no tensorboard folder" "[ -f '$TMP/plain/summary.json' ] && [ ! -e '$TMP/plain/tensorboard' ]"

# Killed once it has checkpoints (the events after the newest are dropped on resume, as the
# metrics lines are), and a half-written record at the end of the killed writer's file.
LONG=(train "${RUN[@]}" --steps 400 --save-every 50 --eval-every 25 --tensorboard --run-dir "$TMP/long")
"$NT" "${LONG[@]}" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  [ "$(ls "$TMP/long/checkpoints" 2>/dev/null | grep -c 'step-.*safetensors$')" -ge 1 ] && break
  sleep 0.05
done
# ... and has logged steps past that checkpoint, long before the next one (however slow the
# build: sanitizers).
at_save=$(wc -l <"$TMP/long/metrics.jsonl")
for _ in $(seq 1 1200); do
  [ "$(wc -l <"$TMP/long/metrics.jsonl")" -ge $((at_save + 2)) ] && break
  sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null
check "the killed run had no summary" "[ ! -e '$TMP/long/summary.json' ]"
lines_at_kill=$(wc -l <"$TMP/long/metrics.jsonl")
printf '\x40\x00\x00' >>"$TMP/long/tensorboard/"events.out.tfevents.*
"$NT" train --resume "$TMP/long" --quiet --tensorboard >/dev/null 2>&1
check "the resumed run finished" "[ -f '$TMP/long/summary.json' ]"
check "the resumed run appended a second event file" "[ \$(ls '$TMP/long/tensorboard' | grep -c tfevents) -eq 2 ]"
kept=$(ls "$TMP/long/tensorboard" | sort -t. -k7 -n | tail -n1 | sed 's/.*\.//')
check "the resume dropped the events past its checkpoint ($kept of $lines_at_kill lines kept)" \
  "[ '$kept' -gt 0 ] && [ '$kept' -lt '$lines_at_kill' ]"
check "its events match metrics.jsonl with every step once" "events '$TMP/long' >/dev/null"

# Through a sweep, and sweep files in TOML.
cat >"$TMP/sweep.toml" <<'TOML'
seeds = 2
[grid]
lr-matrix = [0.01, 0.02]
depth = [2]
[flags]
steps = 3
sample-tokens = 0
[[variants]]
name = "base"
[[variants]]
name = "stream"
args = "--packing stream"
TOML
cat >"$TMP/sweep.json" <<'JSON'
{"seeds": 2, "grid": {"lr-matrix": [0.01, 0.02], "depth": [2]}, "flags": {"steps": 3, "sample-tokens": 0},
 "variants": [{"name": "base"}, {"name": "stream", "args": "--packing stream"}]}
JSON
SW=(--data "$TMP/data" --preset tiny --threads 1 --dry-run --json)
"$NT" sweep --out "$TMP/sw_toml" --file "$TMP/sweep.toml" "${SW[@]}" >"$TMP/plan_toml.json"
"$NT" sweep --out "$TMP/sw_json" --file "$TMP/sweep.json" "${SW[@]}" >"$TMP/plan_json.json"
check "a TOML sweep file plans the same 8 runs as its JSON twin" \
  "$PY -c \"import json,sys; a,b=(json.load(open(p))['runs'] for p in sys.argv[1:]); assert len(a)==8 and a==b\" '$TMP/plan_toml.json' '$TMP/plan_json.json'"
printf 'seeds = 2\n[grid]\ndepth = [2, 3\n' >"$TMP/broken.toml"
expect_error "malformed TOML: one line naming the file and line" "broken.toml:3:.*not valid TOML" \
  "$NT" sweep --out "$TMP/sw_bad" --file "$TMP/broken.toml" "${SW[@]}"
printf 'seeds = 2\n\n[grid]\ndepth = [2]\n[extra]\nx = 1\n' >"$TMP/unknown.toml"
expect_error "an unknown key in TOML: its line" 'unknown.toml:5: unknown key "extra"' \
  "$NT" sweep --out "$TMP/sw_bad" --file "$TMP/unknown.toml" "${SW[@]}"
printf '[grid]\ndepth = [2]\nwhen = [1979-05-27]\n' >"$TMP/date.toml"
expect_error "a date in TOML: its line" "date.toml:3: a date or time" \
  "$NT" sweep --out "$TMP/sw_bad" --file "$TMP/date.toml" "${SW[@]}"
"$NT" sweep --out "$TMP/sw_tb" --grid 'lr-matrix=0.01,0.02' --data "$TMP/data" --preset tiny --steps 3 \
  --sample-tokens 0 --threads 1 --quiet --tensorboard >/dev/null 2>&1
check "--tensorboard passes through a sweep to every run" \
  "events '$TMP/sw_tb/001_lr-matrix=0.01' >/dev/null && events '$TMP/sw_tb/002_lr-matrix=0.02' >/dev/null"
finish
