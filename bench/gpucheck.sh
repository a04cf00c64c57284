#!/usr/bin/env bash
# Kernel mode's checks on the GPU (issue 17, item 6), on a GPU machine, in one go:
#   1. the GPU tests (tests/gpu: the comparison kernels against numpy on the crafted cases,
#      the host fallback, wrong kernels' messages in a sweep, and every other kernel-mode test);
#   2. where the worker's time goes on the matmul example, with the checks on the GPU and
#      then on the host (as before: every output downloaded), on the same machine;
#   3. the comparison with Kernel Tuner 1.5 (bench/kernel_vs_kerneltuner.py --reps 3).
#
#   bench/gpucheck.sh [OUTDIR]          KT_WHEELS=DIR: install Kernel Tuner from these wheels first
#
# Each step's output is in OUTDIR (default bench-out/gpucheck); a failing step does not stop
# the next ones, and the exit status of each is printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-out/gpucheck}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
if [[ -n ${KT_WHEELS:-} ]]; then
  $PY -m pip install -q --no-index --find-links "$KT_WHEELS" kernel_tuner
fi
{ nvidia-smi -L; git rev-parse --short HEAD; } | tee "$OUT/machine.txt"

$PY -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tee "$OUT/tests.txt"
tests=${PIPESTATUS[0]}
$PY bench/kernel_mode_phases.py 2>&1 | tee "$OUT/phases_gpu_checks.txt"
phases=${PIPESTATUS[0]}
$PY bench/kernel_mode_phases.py --host-checks 2>&1 | tee "$OUT/phases_host_checks.txt"
phases_host=${PIPESTATUS[0]}
$PY bench/kernel_vs_kerneltuner.py --reps 3 --out "$OUT/kt" 2>&1 | tee "$OUT/kt_vs_ksweep.txt"
kt=${PIPESTATUS[0]}

echo "exit status: tests $tests, phases (GPU checks) $phases, phases (host checks) $phases_host, Kernel Tuner comparison $kt"
