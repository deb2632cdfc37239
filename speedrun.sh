#!/usr/bin/env bash
# The main job: install what is missing, build, fetch and prepare the default corpus (once),
# train the default `cpu` preset for the budget, and print val_bpb and a sample.
#   BUDGET=30m ./speedrun.sh            # another budget
#   ./speedrun.sh --preset tiny         # extra arguments go to `nanotrain train`
set -euo pipefail
cd "$(dirname "$0")"
BUDGET=${BUDGET:-5m}
VOCAB=${VOCAB:-8192}
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DNT_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target nanotrain
NT=build/nanotrain

# Data: the pinned public-domain corpus, a BPE tokenizer trained on it, token shards.
# Each step is skipped when its output is already there (data fetch is itself idempotent).
$NT data fetch --out data/corpus --cache data/cache
if [ ! -f "data/tok${VOCAB}.tiktoken" ]; then   # (nanotrain train makes the same files on first use)
  $NT tokenizer train --input data/corpus/train.jsonl --vocab-size "$VOCAB" --out "data/tok${VOCAB}.tiktoken"
fi
if [ ! -f "data/shards-${VOCAB}/data.json" ]; then
  $NT data prepare --tokenizer "data/tok${VOCAB}.tiktoken" --input data/corpus/train.jsonl \
    --val-input data/corpus/val.jsonl --out "data/shards-${VOCAB}"
fi

# (nanotrain pins its threads to cores itself: unpinned, the kernel sometimes parks both on one.)
RUN=runs/speedrun-$(date +%Y%m%d-%H%M%S)
$NT train --data "data/shards-${VOCAB}" --preset cpu --time-budget "$BUDGET" --run-dir "$RUN" "$@"
