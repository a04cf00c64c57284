#!/usr/bin/env bash
# Reproduce the "Search strategies" table of docs/benchmarks.md: every strategy on the five
# recorded datasets, budgets 25/50/100/200, 30 repeats (repeat r = seed r).
# Usage: bench/strategies.sh [DATASET_DIR] [extra bench-strategies options, e.g. --json]
set -euo pipefail
dir=${1:-"$(dirname "$0")/../../shared/datasets"}
shift || true
# One BLAS thread per worker process: the workers already use every core.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
exec nice python -m ksweep.cli.main bench-strategies \
  "$dir"/convolution_A100.json.gz "$dir"/dedispersion_A100.json.gz \
  "$dir"/gemm_RTX3090.json.gz "$dir"/pnpoly_RTX3090.json.gz \
  "$dir"/convolution_W7800_T4.json.gz \
  --strategies auto,surrogate,bayes,random,grid,phased \
  --budgets 25,50,100,200 --repeats 30 --markdown --plot strategies.png "$@"
