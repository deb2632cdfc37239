#!/usr/bin/env bash
# Checks that the ops take their thread count from the caller's ExecContext (kernels/exec.h):
# no file under src/backends, src/composed, src/model, src/optim or src/eval reads or sets
# OpenMP's thread count (omp_get_max_threads, omp_set_num_threads), except where the CPU
# backend hands the context's count to oneDNN (gemm/matmul_onednn.cc) and its peak measurement,
# which is no op (peak.cc). One line per violation.
# usage: tests/repo/exec_context_check.sh REPO_ROOT        (exit 0: clean; 1: violations; 2: usage)
set -euo pipefail
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: exec_context_check.sh REPO_ROOT" >&2
  exit 2
fi
cd "$1"
allowed='^src/backends/cpu/(gemm/matmul_onednn|peak)\.cc:'
hits=$(grep -rnE 'omp_(get_max|set_num)_threads' src/backends src/composed src/model src/optim src/eval |
  grep -vE "$allowed" | grep -vE '^[^:]+:[0-9]+: *//' || true)
if [ -n "$hits" ]; then
  echo "$hits" | sed 's/^/exec_context_check: reads OpenMP state instead of the context: /'
  exit 1
fi
