#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tokenizer and data-path figures (docs/BENCHMARKS.md), measured side by side in one run:
#  1. encoding throughput, cl100k_base (and o200k_base, gpt2), nanotrain 1 and 2 threads vs
#     tiktoken-WASM (npm tiktoken@1.0.22 under node, one thread), same 7.6 MB of the default corpus;
#  2. BPE training on the whole default corpus at vocab 8192 (seconds);
#  3. shard preparation of the default corpus with that tokenizer (seconds, end to end).
# usage: bench/tokenizer_bench.sh [NANOTRAIN_BINARY]   (from the repository root; needs
#        `nanotrain data fetch` done or doable, and `npm ci --prefix tools/tiktoken`)
set -euo pipefail
NT=${1:-build/nanotrain}
MB=${MB:-7.6}
CORPUS=data/corpus
OUT=${OUT:-/tmp/nanotrain-tokenizer-bench}
mkdir -p "$OUT"
"$NT" data fetch --quiet > /dev/null
for enc in cl100k_base o200k_base gpt2; do
  for th in 1 2; do
    "$NT" tokenizer encode --tokenizer $enc --input $CORPUS/train.jsonl --max-mb $MB --bench --threads $th --repeat 3
  done
  node tools/tiktoken/bench.cjs $enc $CORPUS/train.jsonl $MB 3
done
/usr/bin/time -f "tokenizer train: %e s wall, %M KB max RSS" \
  "$NT" tokenizer train --input $CORPUS/train.jsonl --vocab-size 8192 --out "$OUT/tok8192.tiktoken"
/usr/bin/time -f "data prepare: %e s wall, %M KB max RSS" \
  "$NT" data prepare --quiet --input $CORPUS/train.jsonl --val-input $CORPUS/val.jsonl \
  --tokenizer "$OUT/tok8192.tiktoken" --out "$OUT/prepared"
