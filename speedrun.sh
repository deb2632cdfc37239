#!/usr/bin/env bash
# The main job: install what is missing, build, fetch and prepare the default corpus (once),
# train the default `cpu` preset (the default) for the budget, and print val_bpb and a sample.
#   BUDGET=30m ./speedrun.sh            # another budget
#   ./speedrun.sh --preset tiny         # extra arguments go to `nanotrain train`
set -euo pipefail
cd "$(dirname "$0")"
BUDGET=${BUDGET:-5m}
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target nanotrain
NT=build/nanotrain

# Data: with no --data, `nanotrain train` fetches the pinned public-domain corpus, trains a BPE
# tokenizer of 8192 tokens on it and writes the token shards to data/shards-8192 (first run only).
# nanotrain pins its threads to cores itself (unpinned, the kernel sometimes parks both on one).
RUN=runs/speedrun-$(date +%Y%m%d-%H%M%S)
$NT train --time-budget "$BUDGET" --run-dir "$RUN" "$@"
