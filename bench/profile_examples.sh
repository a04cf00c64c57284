#!/usr/bin/env bash
# ksweep explain / profile / compare on the device (issue 15's evidence):
#   bench/profile_examples.sh sgemm|flash|kernel OUTDIR
# A short sweep of the example (its first shape), ksweep profile of the best and the default
# config (CSV exports kept in OUTDIR/csv), ksweep compare best default, and the check of
# ksweep's occupancy against the CUDA runtime's (bench/occupancy_check.py).
set -uo pipefail
which=$1; out=$2; mkdir -p "$out"
root=$(pwd)
case $which in
  sgemm)  spec=examples/sgemm/sgemm.toml; shape=sq4096; evals=16 ;;
  flash)  spec=examples/flash_attention/flash_attn.toml; shape=b2_s2048_d128; evals=16 ;;
  # the default config may be the best: then B is the slowest valid one
  kernel) spec=examples/kernel_mode/matmul.toml; shape=w4096; evals=16 ;;
esac
db=/tmp/ksweep-$which/$which.db   # the database and its build cache stay off OUTDIR
mkdir -p /tmp/ksweep-$which
python3 -m ksweep run $spec --shape $shape --max-evals $evals --db $db -q > $out/$which.run.txt 2>&1
echo "run: exit $?"; tail -5 $out/$which.run.txt
python3 -m ksweep report $db --top 5 > $out/$which.report.txt 2>&1; cat $out/$which.report.txt | head -30
other=default
if python3 -m ksweep compare $db best default --no-sass --json | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if any(r['a']!=r['b'] for r in d['params']) else 1)"; then other=default; else other=worst; fi
echo "comparing best with: $other"
python3 -m ksweep profile $db --configs best $other --csv-dir $out/csv > $out/$which.profile.txt 2>&1
echo "profile: exit $?"; cat $out/$which.profile.txt
python3 -m ksweep compare $db best $other > $out/$which.compare.txt 2>&1
echo "compare: exit $?"; cat $out/$which.compare.txt
python3 -m ksweep compare $db best $other --json > $out/$which.compare.json 2>&1
python3 -m ksweep explain $db best > $out/$which.explain.txt 2>&1
echo "explain: exit $?"; tail -25 $out/$which.explain.txt
python3 bench/occupancy_check.py $db > $out/$which.occupancy.txt 2>&1
echo "occupancy: exit $?"; tail -40 $out/$which.occupancy.txt
cp $db $out/
tar -czf $out.tgz -C $(dirname $out) $(basename $out) && rm -rf $out   # one file comes back
