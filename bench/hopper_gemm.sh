#!/bin/sh
# Issue 18 on one GPU machine: the Hopper FP8 GEMM example (examples/hopper_gemm) tuned at
# seed 000's three shapes with --strategy phased, then a summary per shape (best config,
# default vs best, the cuBLASLt baselines, build CPU-seconds per config, configs per minute,
# GPU-idle share).
#   sh bench/hopper_gemm.sh [sweep|smoke] [WHEEL_DIR]
# smoke: the default config of each shape only. WHEEL_DIR: where the nvidia_cutlass wheel is
# (offline machines). Results go to $OUT (default /tmp/hopper_gemm).
set -e
cd "$(dirname "$0")/.."
mode=${1:-sweep}
sh examples/hopper_gemm/setup.sh ${2:+"$2"}
out=${OUT:-/tmp/hopper_gemm}
mkdir -p "$out"
db="$out/hopper_gemm.db"
export HG_LT_CACHE="$out/lt_algos.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader || true
echo "cores: $(nproc)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)  date: $(date -u +%F)"
if [ "$mode" = smoke ]; then
  python3 -m ksweep run examples/hopper_gemm/hopper_gemm.toml --db "$db" --strategy grid --max-evals 1 2>&1 | tail -n 30
else
  python3 -m ksweep run examples/hopper_gemm/hopper_gemm.toml --db "$db" --strategy phased 2>&1 | tail -n 60
fi
python3 bench/hopper_gemm_summary.py "$db" examples/hopper_gemm/hopper_gemm.toml
