#!/usr/bin/env bash
# The examples' confirmed winners under the hardening, on a GPU machine with compute-sanitizer:
# a short sweep of each (hardening on, as by default) and what the hardening said of its leaders.
#   bench/harden_examples.sh [OUTDIR] [MAX_EVALS]
#   ONLY="kernel_matmul hopper_default" bench/harden_examples.sh ...   (some of them)
# SGEMM's 150-config sweep is bench/harden_overhead.py's. The Hopper GEMM's default config is
# swept alone when examples/hopper_gemm/setup.sh has put CUTLASS's headers in place (offline:
# `sh examples/hopper_gemm/setup.sh WHEEL_DIR` with the nvidia_cutlass wheel there).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-out/harden_examples}
N=${2:-24}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
{ nvidia-smi -L; compute-sanitizer --version | tail -1; git rev-parse --short HEAD; date -u +%F; } > "$OUT/machine.txt" 2>&1
ONLY=${ONLY:-flash_attention kernel_matmul hopper_default}
wanted() { [[ " $ONLY " == *" $1 "* ]]; }
sweep() {  # name, spec, options...
  local name=$1 spec=$2
  shift 2
  wanted "$name" || return 0
  timeout ${SWEEP_TIMEOUT:-200} $PY -m ksweep run "$spec" --db "$OUT/$name.db" --max-evals "$N" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?"
  grep -E "^harden:|BEST" "$OUT/$name.txt" | head -6
}
sweep flash_attention examples/flash_attention/flash_attn.toml --shape b1_s512_d64
sweep kernel_matmul examples/kernel_mode/matmul.toml
# what the sweep's time budget left (racecheck of a 4096x4096 launch takes longer than the
# 60 s it gives): ksweep harden runs it with the tool's own timeout
if wanted kernel_matmul; then
  timeout 300 $PY -m ksweep harden "$OUT/kernel_matmul.db" > "$OUT/kernel_matmul_harden.txt" 2>&1
  echo "kernel_matmul harden: exit $?"
  tail -4 "$OUT/kernel_matmul_harden.txt"
fi
if [[ -f examples/hopper_gemm/cutlass/include/cutlass/cutlass.h ]]; then
  N=1 sweep hopper_default examples/hopper_gemm/hopper_gemm.toml --shape fc2
fi
