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
# Two tests at a time (-j): most are single-threaded or wait on the PyTorch oracle; the few that
# need the whole machine are marked RUN_SERIAL.
ctest --test-dir build --output-on-failure --timeout 900 -j"$(nproc)"
# The kernel tests ran every CPU kernel table this machine can execute (backends/cpu/cpu_tables.h);
# which those were, and which were skipped for lack of hardware:
build/tests/kernel_tables_test --gtest_filter=KernelTables.Report | grep '^kernel table'
# On a CPU with AMX the model runs the AMX table: the model and optimizer tests again as on a CPU
# without it (the kernel tests above already ran the AVX-512-BF16 table on their own).
if grep -qw amx_bf16 /proc/cpuinfo; then
  echo "== again with NANOTRAIN_NO_AMX=1 (the model on the AVX-512-BF16 table)"
  NANOTRAIN_NO_AMX=1 ctest --test-dir build --output-on-failure --timeout 900 -j"$(nproc)" --no-tests=error \
    -R 'Bf16|Gpt\.|Optimizer|Muon|TorchParity' -E 'Kernel'
fi
# On a CPU with AVX-512, the whole program once more as on the AVX2 floor: the floor's table as
# the program's, and oneDNN held to AVX2 (only a process-wide setting can do that).
if grep -qw avx512f /proc/cpuinfo; then
  echo "== again with NANOTRAIN_NO_AVX512=1 (the AVX2 floor)"
  NANOTRAIN_NO_AVX512=1 ctest --test-dir build --output-on-failure --timeout 900 -j"$(nproc)" --no-tests=error \
    -R 'Kernel|Bf16|Gpt\.|Optimizer|Muon|TorchParity|Variant'
fi
