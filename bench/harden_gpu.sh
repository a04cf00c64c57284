#!/usr/bin/env bash
# The hardening on a GPU machine with compute-sanitizer, in one go:
#   1. the seeded fault suite (tests/gpu/test_gpu_harden.py): each planted fault caught and never
#      BEST, in kernel mode and program mode; ksweep.h's Timer runs once under a sanitizer;
#   2. what the hardening adds to a 150-config SGEMM sweep (bench/harden_overhead.py).
#
#   bench/harden_gpu.sh [OUTDIR] [harden_overhead.py options...]
#
# Each step's output is in OUTDIR (default bench-out/harden); a failing step does not stop the
# next one; the exit status of each is printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-out/harden}
shift || true
mkdir -p "$OUT"
PY=${PYTHON:-python3}
{ nvidia-smi -L; compute-sanitizer --version | tail -1; git rev-parse --short HEAD; } 2>&1 | tee "$OUT/machine.txt"
$PY -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_harden.py 2>&1 | tee "$OUT/tests.txt"
tests=${PIPESTATUS[0]}
$PY bench/harden_overhead.py --out "$OUT" "$@" 2>&1 | tee "$OUT/overhead.txt"
overhead=${PIPESTATUS[0]}
echo "tests: exit $tests; overhead: exit $overhead"
