#!/usr/bin/env bash
# Copy Kernel Tuner's own CUDA examples convolution.cu and pnpoly.cu, unmodified, out of a
# Kernel Tuner git checkout (a work tree or a bare git directory) into OUTDIR, for
# bench/kt_examples_vs_kerneltuner.py --kt-examples OUTDIR. They are not part of this
# repository: they are Kernel Tuner's, fetched at run time.
#
#   bench/fetch_kt_examples.sh KERNEL_TUNER_CHECKOUT OUTDIR [REVISION]
#
# REVISION (default HEAD) is any git revision of the checkout; the commit the files came
# from is written to OUTDIR/SOURCE.txt.
set -euo pipefail
if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 KERNEL_TUNER_CHECKOUT OUTDIR [REVISION]" >&2
  exit 2
fi
repo=$1 out=$2 rev=${3:-HEAD}
if [[ -d $repo/.git || -f $repo/.git ]]; then
  git_dir=$(git -C "$repo" rev-parse --git-dir)
  [[ $git_dir == /* ]] || git_dir=$repo/$git_dir
else
  git_dir=$repo  # a bare repository or a mirror's git directory
fi
commit=$(git --git-dir="$git_dir" rev-parse --verify "$rev^{commit}") || {
  echo "$repo: no git revision '$rev' (give a Kernel Tuner checkout)" >&2
  exit 2
}
mkdir -p "$out"
for name in convolution.cu pnpoly.cu; do
  git --git-dir="$git_dir" show "$commit:examples/cuda/$name" >"$out/$name" || {
    echo "$repo: examples/cuda/$name not found at $commit (is this Kernel Tuner?)" >&2
    exit 2
  }
done
echo "Kernel Tuner $commit examples/cuda/{convolution.cu,pnpoly.cu}" >"$out/SOURCE.txt"
echo "$out: convolution.cu pnpoly.cu from Kernel Tuner $commit"
