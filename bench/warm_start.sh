#!/usr/bin/env bash
# Reproduce the "Warm start" tables of docs/benchmarks.md: the default strategy on the same
# kernel recorded on several GPUs, each dataset warm-started from each other one of its
# kernel (target ← source), then the cold searches of the datasets not in the "Search
# strategies" table; budgets 25/50/100/200, 30 repeats (repeat r = seed r).
# Usage: bench/warm_start.sh [DATASET_DIR] [OUT_DIR]
set -euo pipefail
dir=${1:-"$(dirname "$0")/../../shared/datasets"}
out=${2:-.}
# One BLAS thread per worker process: the workers already use every core.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for kernel in dedispersion convolution gemm; do
  nice python -m ksweep.cli.main bench-strategies "$dir"/${kernel}_*.json.gz --strategies auto \
    --warm-start-from same-kernel --warm-only --repeats 30 --markdown --save "$out/warm_$kernel.json" \
    > "$out/warm_$kernel.md"
done
nice python -m ksweep.cli.main bench-strategies "$dir"/dedispersion_A4000.json.gz "$dir"/dedispersion_W7800.json.gz \
  "$dir"/convolution_A6000_original.json.gz "$dir"/gemm_RTX2080Ti.json.gz --strategies auto --repeats 30 \
  --markdown --save "$out/cold_new.json" > "$out/cold_new.md"
