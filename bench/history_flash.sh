#!/usr/bin/env bash
# Seed 002's evolution timeline in miniature (issue 16): three source revisions of the
# flash-attention example in a git repository of their own, each swept exhaustively on one
# shape (b2_s2048_d128: 65 valid configs), then `ksweep check` on the third before it is
# recorded, `ksweep history` and its plot.
#   bench/history_flash.sh OUTDIR
#   v1  padding removed   (#undef SMEM_PAD / #define SMEM_PAD 0 after its guard)
#   v2  the example as it is
#   v3  cp.async pipeline removed (#undef STAGES / #define STAGES 1 after its guard)
set -uo pipefail
out=$1; mkdir -p "$out"
src=$(pwd)/examples/flash_attention
work=$(mktemp -d)/fa; mkdir -p "$work"; cd "$work"
cp "$src"/flash_attn.cu "$src"/flash_attn.toml .
export GIT_AUTHOR_NAME=ksweep GIT_AUTHOR_EMAIL=ksweep@localhost GIT_COMMITTER_NAME=ksweep GIT_COMMITTER_EMAIL=ksweep@localhost
git init -q; printf '.ksweep/\n' > .gitignore
override() {  # $1: macro, $2: value: force it after its #ifndef guard
  python3 - "$1" "$2" <<'PY'
import re, sys
name, value = sys.argv[1], sys.argv[2]
src = open("flash_attn.cu").read()
guard = re.search(r"#ifndef %s\n#define %s [^\n]*\n#endif\n" % (name, name), src)
src = src[:guard.end()] + "#undef %s\n#define %s %s\n" % (name, name, value) + src[guard.end():]
open("flash_attn.cu", "w").write(src)
PY
}
sweep() { python3 -m ksweep run flash_attn.toml --shape b2_s2048_d128 --strategy grid -q > "$out/run-$1.txt" 2>&1; echo "sweep $1: exit $?"; tail -3 "$out/run-$1.txt"; }
override SMEM_PAD 0; git add -A; git commit -qm "v1: no shared-memory padding"; sweep v1
cp "$src"/flash_attn.cu .; git commit -qam "v2: rows padded by SMEM_PAD"; sweep v2
override STAGES 1; git commit -qam "v3: no cp.async pipeline"
python3 -m ksweep check flash_attn.toml --shape b2_s2048_d128 > "$out/check-v3.txt" 2>&1; echo "check v3: exit $?"; cat "$out/check-v3.txt"
sweep v3
python3 -m ksweep history .ksweep/flash_attn.db --plot "$out/history.png" > "$out/history.txt" 2>&1; echo "history: exit $?"; cat "$out/history.txt"
git log --oneline > "$out/git-log.txt"
