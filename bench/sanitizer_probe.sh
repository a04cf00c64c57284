#!/usr/bin/env bash
# What each compute-sanitizer tool costs on one SGEMM config (sq2048), with and without a
# kernel filter naming the config's own kernel, one at a time and the four at once.
#   bench/sanitizer_probe.sh [OUTDIR]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-out/sanitizer_probe}
mkdir -p "$OUT"
W=$(mktemp -d)
compute-sanitizer --version | tail -1
compute-sanitizer --help | grep -B1 -A12 -E "kernel-name|launch-count|launch-skip|kernel-regex" | head -80 > "$OUT/help.txt"
cat "$OUT/help.txt"
D="-DBM=128 -DBN=128 -DBK=16 -DWM=64 -DWN=64 -DWNITER=4 -DTM=8 -DTN=4 -DNUM_THREADS=128 -DGEMM_M=2048 -DGEMM_N=2048 -DGEMM_K=2048"
cd examples/sgemm
nvcc -cubin -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -lineinfo -DKSWEEP_KERNEL_ONLY $D -o $W/k.cubin sgemm.cu
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DSGEMM_CUBIN -I../../ksweep/include -o $W/h sgemm.cu -lcublas -lcuda
cd $W
t() { local s=$(date +%s.%N); "$@" > out.txt 2>&1; local rc=$?; local e=$(date +%s.%N); printf "%6.1f s rc=%d  %s | %s\n" $(echo "$e - $s" | bc) $rc "$*" "$(grep -E 'ERROR SUMMARY|gflops|error' out.txt | tail -2 | tr '\n' ' ')"; }
t ./h k.cubin 2048 2048 2048
for tool in memcheck racecheck initcheck synccheck; do
  KSWEEP_SANITIZER=$tool t timeout 300 compute-sanitizer --tool $tool --target-processes all ./h k.cubin 2048 2048 2048
  KSWEEP_SANITIZER=$tool t timeout 300 compute-sanitizer --tool $tool --target-processes all --kernel-name kns=sgemm_warptiling ./h k.cubin 2048 2048 2048
done
# the four filtered at once
s=$(date +%s.%N)
for tool in memcheck racecheck initcheck synccheck; do
  (KSWEEP_SANITIZER=$tool timeout 300 compute-sanitizer --tool $tool --target-processes all --kernel-name kns=sgemm_warptiling ./h k.cubin 2048 2048 2048 > par_$tool.txt 2>&1; echo "$tool rc=$?") &
done
wait
e=$(date +%s.%N); echo "four at once: $(echo "$e - $s" | bc) s"
grep -h "ERROR SUMMARY" par_*.txt
# two filters: does a second --kernel-name add or replace?
KSWEEP_SANITIZER=memcheck t compute-sanitizer --tool memcheck --kernel-name kns=nomatch --kernel-name kns=sgemm_warptiling ./h k.cubin 2048 2048 2048
KSWEEP_SANITIZER=memcheck compute-sanitizer --tool memcheck --kernel-name kns=sgemm_warptiling,kns=nomatch ./h k.cubin 2048 2048 2048 2>&1 | tail -3
KSWEEP_SANITIZER=memcheck compute-sanitizer --tool memcheck --print-level info --kernel-name kre='^(fill_uniform|sgemm_warptiling)$' ./h k.cubin 2048 2048 2048 2>&1 | tail -3
cp out.txt par_*.txt "$OLDPWD/../../$OUT/" 2>/dev/null || true
