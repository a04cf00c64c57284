#!/usr/bin/env bash
# Issue 7's throughput benchmark on a GPU machine (docs/benchmarks.md): the SGEMM example at
# 4096^3 swept by a serial compile-then-run loop, by ksweep on one GPU and on two GPUs (through
# Dask, and without), first with a process per run, then on persistent hosts. See bench/throughput.py.
#   bench/throughput.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-bench-out}}"
python3 bench/throughput.py --only serial,one,two,local2 --configs 200 --serial-configs 25 --out "$out"
python3 bench/throughput.py --only serial,one --configs 926 --serial-configs 20 --out "$out/persistent" -- --persistent
python3 bench/throughput.py --only two,local2 --configs 926 --out "$out/persistent" -- --persistent
