#!/usr/bin/env bash
# Builds nanotrain and runs the whole test suite: kernels against their references, gradient
# checks, the model against an independent PyTorch implementation, the tokenizer against
# tiktoken, the data path, and the command line end to end.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install_deps.sh
if [ -f tools/tiktoken/package-lock.json ]; then
  npm ci --prefix tools/tiktoken --no-audit --no-fund --loglevel=error >/dev/null
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DNT_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure --timeout 900
# On a CPU with AMX the dispatched bf16 kernels are the AMX ones: run the kernel, bf16 and model
# tests again as on a CPU without it, so the AVX-512-BF16 paths stay covered here too.
if grep -qw amx_bf16 /proc/cpuinfo; then
  echo "== again with NANOTRAIN_NO_AMX=1 (the AVX-512-BF16 paths)"
  NANOTRAIN_NO_AMX=1 ctest --test-dir build --output-on-failure --timeout 900 \
    -R 'Kernel|Bf16|Gpt\.|Optimizer|Muon|TorchParity'
fi
# On a CPU with AVX-512, the same tests once more as on the AVX2 floor (the floor's kernels, and
# oneDNN held to AVX2), so that a machine without AVX-512 runs tested code.
if grep -qw avx512f /proc/cpuinfo; then
  echo "== again with NANOTRAIN_NO_AVX512=1 (the AVX2 floor)"
  NANOTRAIN_NO_AVX512=1 ctest --test-dir build --output-on-failure --timeout 900 \
    -R 'Kernel|Bf16|Gpt\.|Optimizer|Muon|TorchParity'
fi
