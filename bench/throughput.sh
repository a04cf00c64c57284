#!/usr/bin/env bash
# Issue 7's throughput benchmark on a GPU machine: a serial compile-then-run loop, ksweep on
# one GPU, and ksweep on two GPUs through Dask (when two are visible). See bench/throughput.py.
#   bench/throughput.sh [CONFIGS] [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bench/throughput.py --configs "${1:-200}" --out "${2:-${OUT:-bench-out}}"
