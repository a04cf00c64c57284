#!/bin/sh
# Issue 18 on one GPU machine: the Hopper FP8 GEMM example (examples/hopper_gemm) tuned at
# seed 000's three shapes with --strategy phased, then a summary per shape (best config,
# default vs best, the cuBLASLt baselines, build CPU-seconds per config, configs per minute,
# GPU-idle share).
#   sh bench/hopper_gemm.sh [sweep|smoke|probe] [WHEEL_DIR] [ksweep run options...]
# smoke: the default config of each shape only; probe: a few whole programs built by nvcc
# directly and run with HG_VERBOSE=1 (where a run's time goes, both accumulation modes). WHEEL_DIR: where the nvidia_cutlass wheel is
# (offline machines). Results go to $OUT (default /tmp/hopper_gemm). HG_SPEC: another spec
# to sweep (a sub-space written by bench/hopper_gemm_subspace.py).
set -e
cd "$(dirname "$0")/.."
mode=${1:-sweep}
sh examples/hopper_gemm/setup.sh ${2:+"$2"}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
out=${OUT:-/tmp/hopper_gemm}
mkdir -p "$out"
db="$out/hopper_gemm.db"
spec=${HG_SPEC:-examples/hopper_gemm/hopper_gemm.toml}
export HG_LT_CACHE="$out/lt_algos.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader || true
echo "cores: $(nproc)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)  date: $(date -u +%F)"
if [ "$mode" = probe ]; then
  inc=$(python3 -m ksweep include)
  probe() {  # name, defines...
    name=$1
    shift
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG \
      -Iexamples/hopper_gemm/cutlass/include -Iexamples/hopper_gemm/cutlass/tools/util/include -I"$inc" \
      "$@" -o "$out/$name" examples/hopper_gemm/hopper_gemm.cu -lcublasLt
  }
  probe fc2_fast -DEPILOGUE=2 -DFAST_ACCUM=1 &
  probe fc2_precise -DEPILOGUE=2 -DFAST_ACCUM=0 &
  probe fc1_tanh_pp -DEPILOGUE=1 -DGELU_TANH=1 -DSCHEDULE=1 -DTILE_N=256 -DTILE_M=64 &
  probe pe_256 -DEPILOGUE=0 -DTILE_N=256 -DCLUSTER_M=2 &
  wait
  for p in "fc2_fast 928256 768 3072" "fc2_precise 928256 768 3072" "fc1_tanh_pp 928256 3072 768" "pe_256 928256 768 768"; do
    set -- $p
    echo "== $p"
    HG_VERBOSE=1 "$out/$1" $2 $3 $4 2>&1
  done
  exit 0
fi
if [ "$mode" = smoke ]; then
  python3 -m ksweep run "$spec" --db "$db" --strategy grid --max-evals 1 "$@" 2>&1 | tail -n 30
else
  python3 -m ksweep run "$spec" --db "$db" --strategy "${HG_STRATEGY:-phased}" "$@" > "$out/sweep.log" 2>&1 || true
  tail -n 80 "$out/sweep.log"
fi
python3 bench/hopper_gemm_summary.py "$db" "$spec"
