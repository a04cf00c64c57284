#!/usr/bin/env bash
# Issue 7's throughput benchmark on a GPU machine (docs/benchmarks.md): the SGEMM example at
# 4096^3 swept by a serial compile-then-run loop (the whole program per config, as seed 001
# does, and by hand with the spec's split build), by ksweep on one GPU and on two GPUs
# (through Dask, and without): on persistent hosts, then with a process per run.
# See bench/throughput.py.
#   bench/throughput.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-bench-out}}"
python3 bench/throughput.py --only serial,serial_split --serial-configs 20 --out "$out/loops"
python3 bench/throughput.py --only one,two,local2 --configs 926 --out "$out/persistent" -- --persistent
python3 bench/throughput.py --only one,two,local2 --configs 200 --out "$out/process"
