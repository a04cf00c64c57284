#!/usr/bin/env bash
# Sweep the SGEMM and flash-attention examples on a GPU machine, then print a summary:
# best config, best time, baseline (cuBLAS / PyTorch SDPA), ratio, the default config,
# counts per status and sweep wall time.
#
#   bench/gpu_examples.sh [OUTDIR]            (both examples)
#   PART=sgemm bench/gpu_examples.sh OUTDIR   (one of them: sgemm | fa)
#
# Budgets: SGEMM_EVALS (per shape, 4096^3; default 150), SGEMM_SMALL_EVALS (other shapes, 40),
# FA_EVALS (per shape, default 40). The key flash-attention shape (2,8,2048,64) gets FA_KEY_EVALS (all).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-bench-out}}
mkdir -p "$OUT"
KSWEEP=${KSWEEP:-python3 -m ksweep}
PART=${PART:-all}
STRATEGY=${STRATEGY:-auto}

now() { python3 -c 'import time; print(time.time())'; }

if [[ $PART == all || $PART == sgemm ]]; then
  t0=$(now)
  $KSWEEP run examples/sgemm/sgemm.toml --db "$OUT/sgemm.db" --strategy "$STRATEGY" --shape sq4096 \
    --max-evals "${SGEMM_EVALS:-150}" -q >"$OUT/sgemm_sq4096.log" 2>&1 || { tail -30 "$OUT/sgemm_sq4096.log"; exit 1; }
  t1=$(now)
  $KSWEEP run examples/sgemm/sgemm.toml --db "$OUT/sgemm.db" --strategy "$STRATEGY" --shape sq2048 --shape skinny \
    --max-evals "${SGEMM_SMALL_EVALS:-40}" -q >"$OUT/sgemm_small.log" 2>&1 || { tail -30 "$OUT/sgemm_small.log"; exit 1; }
  t2=$(now)
  echo "sgemm sq4096 $t0 $t1" >"$OUT/walls.txt"
  echo "sgemm sq2048+skinny $t1 $t2" >>"$OUT/walls.txt"
  # the default config: the source built alone, no -D flags
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I"$($KSWEEP include)" -o "$OUT/sgemm_default" examples/sgemm/sgemm.cu -lcublas
  "$OUT/sgemm_default" 4096 4096 4096 >"$OUT/sgemm_default.txt"
fi

if [[ $PART == all || $PART == fa ]]; then
  python3 examples/flash_attention/sdpa_baseline.py >"$OUT/sdpa.txt"
  t0=$(now)
  $KSWEEP run examples/flash_attention/flash_attn.toml --db "$OUT/fa.db" --strategy "$STRATEGY" \
    --shape b2_s2048_d64 ${FA_KEY_EVALS:+--max-evals $FA_KEY_EVALS} -q >"$OUT/fa_key.log" 2>&1 || { tail -30 "$OUT/fa_key.log"; exit 1; }
  t1=$(now)
  $KSWEEP run examples/flash_attention/flash_attn.toml --db "$OUT/fa.db" --strategy "$STRATEGY" \
    --shape b1_s512_d64 --shape b1_s512_d64_causal --shape b2_s2048_d64_causal --shape b2_s2048_d128 \
    --shape b2_s2048_d128_causal --max-evals "${FA_EVALS:-40}" -q >"$OUT/fa_rest.log" 2>&1 || { tail -30 "$OUT/fa_rest.log"; exit 1; }
  t2=$(now)
  echo "fa b2_s2048_d64 $t0 $t1" >>"$OUT/walls.txt"
  echo "fa other-shapes $t1 $t2" >>"$OUT/walls.txt"
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DHEAD_DIM=64 -DSEQ_LEN=2048 -o "$OUT/fa_default" \
    examples/flash_attention/flash_attn.cu
  "$OUT/fa_default" 2 8 2048 64 0 >"$OUT/fa_default.txt"
fi

python3 bench/examples_summary.py "$OUT"
