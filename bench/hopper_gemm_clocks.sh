#!/bin/sh
# Issue 18: how the power cap moves the timings. Builds the best patch_embed and fc1 configs
# as whole programs (nvcc directly, as `hopper_gemm.sh probe` does), runs each twice with
# HG_VERBOSE=1 (each paired timing's blocks in order, the kernel alone after them, the
# baselines timed one after the other) while nvidia-smi samples SM clock and power every 25 ms.
#   sh bench/hopper_gemm_clocks.sh [WHEEL_DIR]      # results in $OUT (default /tmp/hopper_gemm_clocks)
set -e
cd "$(dirname "$0")/.."
sh examples/hopper_gemm/setup.sh ${1:+"$1"} >/dev/null
out=${OUT:-/tmp/hopper_gemm_clocks}
mkdir -p "$out"
inc=$(python3 -m ksweep include)
build() {  # name, defines...
  name=$1
  shift
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DNDEBUG -diag-suppress 177 \
    -Iexamples/hopper_gemm/cutlass/include -Iexamples/hopper_gemm/cutlass/tools/util/include -I"$inc" \
    "$@" -o "$out/$name" examples/hopper_gemm/hopper_gemm.cu -lcublasLt
}
build pe -DEPILOGUE=0 -DTILE_M=256 -DTILE_N=128 -DTILE_K=128 -DSTAGES=4 -DCLUSTER_M=1 -DCLUSTER_N=2 -DSCHEDULE=0 \
  -DFAST_ACCUM=1 -DEPI_TILE_N=64 -DPOS_VEC=2 &
pe=$!
build fc1 -DEPILOGUE=1 -DTILE_M=128 -DTILE_N=128 -DTILE_K=128 -DSTAGES=0 -DCLUSTER_M=2 -DCLUSTER_N=1 -DSCHEDULE=1 \
  -DFAST_ACCUM=1 -DEPI_TILE_N=128 -DGELU_TANH=1 -DSWIZZLE=4 &
fc1=$!
wait $pe  # each build's own status (a bare wait says 0)
wait $fc1
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)  date: $(date -u +%F)"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.sw_power_cap --format=csv,noheader \
  -lms 25 > "$out/smi.csv" &
smi=$!
trap 'kill $smi 2>/dev/null || true' EXIT  # the sampler stops whatever happens to the runs
for i in 1 2; do
  echo "== patch_embed, run $i"
  HG_VERBOSE=1 "$out/pe" 928256 768 768 2>&1 | grep -E 'paired|alone|one after|RESULT|rror' || true
  echo "== fc1, run $i"
  HG_VERBOSE=1 "$out/fc1" 928256 3072 768 2>&1 | grep -E 'paired|alone|one after|RESULT|rror' || true
done
kill $smi 2>/dev/null || true
python3 - "$out/smi.csv" <<'PY'
import csv, statistics, sys
# a line cut off when the sampler stopped is left out
rows = [r for r in csv.reader(open(sys.argv[1]), skipinitialspace=True)
        if len(r) == 4 and r[1].endswith("MHz") and r[2].endswith("W")]
clock = [float(r[1].split()[0]) for r in rows]
power = [float(r[2].split()[0]) for r in rows]
capped = sum(r[3].strip() == "Active" for r in rows)
print(f"{len(rows)} samples: SM clock median {statistics.median(clock):.0f} MHz (min {min(clock):.0f}, "
      f"max {max(clock):.0f}); power median {statistics.median(power):.0f} W (max {max(power):.0f}); "
      f"sw_power_cap active in {capped}")
PY
