#!/bin/sh
# The start-up of kernel mode, this tree against another (GPU machine):
#   sh bench/kernel_startup.sh OTHER_TREE [ROUNDS]
# OTHER_TREE: another checkout's root (with bench/kernel_timeline.py copied in). Each round
# runs bench/kernel_timeline.py (the matmul example, grid, empty caches) in both trees, the
# order alternating, each with its own tree first on PYTHONPATH (the worker it spawns too).
set -eu
other=$(cd "$1" && pwd)
rounds=${2:-2}
here=$(pwd)
base=${PYTHONPATH:-}
i=1
while [ "$i" -le "$rounds" ]; do
    if [ $((i % 2)) -eq 1 ]; then order="$other $here"; else order="$here $other"; fi
    for tree in $order; do
        echo "=== round $i: $( [ "$tree" = "$here" ] && echo this tree || echo other tree )"
        (cd "$tree" && PYTHONPATH="$tree${base:+:$base}" python3 bench/kernel_timeline.py examples/kernel_mode/matmul.toml -q | sed -n '/^timeline/,$p')
    done
    i=$((i + 1))
done
