#!/bin/sh
# Issue 18: where a fused epilogue's time goes, on the best configs as whole programs (nvcc
# directly, as `hopper_gemm.sh probe` does). SET patch_embed: each way of loading the positional
# table (POS_PREFETCH 0: per subtile from global memory into registers; 1: every subtile's part
# at the start of the tile; 2: TMA into shared memory by the epilogue's producer warp) and none
# (HG_PROBE_PLAIN: D = acc, the ceiling of any way of loading it). SET fc1: the GELU epilogue,
# bias only (HG_PROBE_BIAS_ONLY) and none. A probe's output fails its check (mismatches).
# Every program runs ROUNDS times, in an order rotated each round; printed per program: the
# median and range of ms, the speed-up over unfused and the share of GEMM-only's throughput,
# both timed in alternating blocks (Timer::paired), and the check's figures.
#   sh bench/hopper_gemm_epilogue.sh SET [WHEEL_DIR] [ROUNDS]   # results in $OUT (default /tmp/hopper_gemm_epilogue)
set -e
cd "$(dirname "$0")/.."
set_=${1:?SET: patch_embed or fc1}
sh examples/hopper_gemm/setup.sh ${2:+"$2"} >/dev/null
rounds=${3:-3}
out=${OUT:-/tmp/hopper_gemm_epilogue}
bin=${TMPDIR:-/tmp}/hopper_gemm_epilogue_bin  # the programs (large) and their logs stay out of $OUT
mkdir -p "$out" "$bin"
export HG_LT_CACHE="$out/lt_algos.txt"
inc=$(python3 -m ksweep include)
case $set_ in
patch_embed)
  args="928256 768 768"
  pp="-DEPILOGUE=0 -DSCHEDULE=1 -DTILE_M=128 -DTILE_N=128 -DTILE_K=128 -DSTAGES=0 -DCLUSTER_M=1 -DCLUSTER_N=2 -DEPI_TILE_N=128"
  co="-DEPILOGUE=0 -DSCHEDULE=0 -DTILE_M=256 -DTILE_N=128 -DTILE_K=128 -DSTAGES=4 -DCLUSTER_M=1 -DCLUSTER_N=2 -DEPI_TILE_N=64"
  variants="pp_pf0:$pp -DPOS_PREFETCH=0
pp_pf1:$pp -DPOS_PREFETCH=1
pp_pf2:$pp -DPOS_PREFETCH=2
pp_pf2_epi64:-DEPILOGUE=0 -DSCHEDULE=1 -DTILE_M=128 -DTILE_N=128 -DTILE_K=128 -DSTAGES=0 -DCLUSTER_M=1 -DCLUSTER_N=2 -DEPI_TILE_N=64 -DPOS_PREFETCH=2
pp_none:$pp -DHG_PROBE_PLAIN
co_pf0:$co -DPOS_PREFETCH=0
co_pf2:-DEPILOGUE=0 -DSCHEDULE=0 -DTILE_M=256 -DTILE_N=128 -DTILE_K=128 -DSTAGES=0 -DCLUSTER_M=1 -DCLUSTER_N=2 -DEPI_TILE_N=64 -DPOS_PREFETCH=2
co_none:$co -DHG_PROBE_PLAIN" ;;
fc1)
  args="928256 3072 768"
  pp="-DEPILOGUE=1 -DSCHEDULE=1 -DTILE_M=128 -DTILE_N=128 -DTILE_K=128 -DSTAGES=0 -DCLUSTER_M=2 -DCLUSTER_N=1 -DEPI_TILE_N=128 -DGELU_TANH=1 -DSWIZZLE=4"
  co="-DEPILOGUE=1 -DSCHEDULE=0 -DTILE_M=256 -DTILE_N=128 -DTILE_K=128 -DSTAGES=0 -DCLUSTER_M=2 -DCLUSTER_N=1 -DEPI_TILE_N=64 -DGELU_TANH=1 -DSWIZZLE=4"
  variants="pp_gelu:$pp
pp_bias:$pp -DHG_PROBE_BIAS_ONLY
pp_none:$pp -DHG_PROBE_PLAIN
co_gelu:$co
co_none:$co -DHG_PROBE_PLAIN" ;;
*) echo "SET: patch_embed or fc1" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader || true
echo "cores: $(nproc)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)  date: $(date -u +%F)"
names=""
pids=""
IFS='
'
for v in $variants; do
  name=${v%%:*}
  defs=${v#*:}
  names="$names $name"
  IFS=' '
  # shellcheck disable=SC2086
  ( /usr/bin/time -f "$name build %e s" nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
      -DNDEBUG -diag-suppress 177 -Iexamples/hopper_gemm/cutlass/include -Iexamples/hopper_gemm/cutlass/tools/util/include \
      -I"$inc" $defs -o "$bin/$name" examples/hopper_gemm/hopper_gemm.cu -lcublasLt > "$bin/$name.build" 2>&1 \
    || { grep -m 3 error "$bin/$name.build"; echo "$name: build failed" >> "$bin/$name.build"; } ) &
  pids="$pids $!"
  IFS='
'
done
IFS=' '
for p in $pids; do wait "$p"; done
for n in $names; do tail -n 1 "$bin/$n.build"; done
: > "$out/results.txt"
r=0
while [ "$r" -lt "$rounds" ]; do
  # rotate the order by one program each round
  set -- $names
  i=0
  while [ "$i" -lt $((r % $#)) ]; do x=$1; shift; set -- "$@" "$x"; i=$((i + 1)); done
  for n in "$@"; do
    [ -x "$bin/$n" ] || continue
    # shellcheck disable=SC2086
    line=$("$bin/$n" $args 2>"$bin/$n.err" | grep '^@@RESULT' || true)
    echo "$n $r $line" >> "$out/results.txt"
  done
  r=$((r + 1))
done
python3 - "$out/results.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, _, *kv = line.split()
    vals = dict(x.split("=", 1) for x in kv if "=" in x)
    rows.setdefault(name, []).append(vals)
keys = ["ms", "paired_ms", "speedup_unfused_paired", "gemm_only_paired_ratio", "mismatches", "max_rel_err", "smem_bytes"]
print("program        runs  " + "  ".join(f"{k:>28}" for k in keys))
for name, runs in rows.items():
    cells = []
    for k in keys:
        v = [float(r[k]) for r in runs if k in r]
        cells.append(f"{statistics.median(v):.4g} ({min(v):.4g}-{max(v):.4g})" if v else "-")
    print(f"{name:14} {len(runs):4}  " + "  ".join(f"{c:>28}" for c in cells))
PY
