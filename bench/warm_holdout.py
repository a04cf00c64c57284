"""The thresholds that judge a warm start's source, chosen with one kernel held out
(docs/benchmarks.md, "A misleading source dropped", out of sample).

    OPENBLAS_NUM_THREADS=1 python bench/warm_holdout.py ../shared/datasets --repeats 30

The judgement has two thresholds (``judge_seeds_below``, the bar while the seeds are
measured, and ``misleading_below``, the bar it rises to by ``judge_after`` results). They were
read off all 14 recorded pairs, so the target they meet there (warm ≥ cold − 0.02 at 25 and
50 evaluations on every pair) is met in sample. Here every pair is searched warm with each
setting of a small grid around them, and the cold searches once (the thresholds play no part
without a source). Then, for each kernel in turn, the setting is chosen on the other kernels'
pairs only (most pairs meeting the target, then the highest mean of warm − cold at the worse
of the two budgets) and measured on the held-out kernel's pairs. Repeat r uses seed r for the
cold and every warm search.

Prints the grid's table (pairs meeting the target and the worst pair's warm − cold, per
setting) and one row per held-out kernel: the setting chosen without it, and its pairs
meeting the target with it against with the defaults. Exits 1 when some held-out pair misses.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from warm_vs_cold import BUDGETS, KERNELS, MARGIN, _one  # bench/ is the script's folder

from ksweep.replay import load_dataset
from ksweep.replay.bench import same_kernel_pairs
from ksweep.strategies.surrogate import SurrogateSettings

SEEDS_BELOW = (-0.7, -0.5, -0.3)
MISLEADING_BELOW = (0.0, 0.1, 0.2)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("datasets", help="the folder of the recorded datasets")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    args = p.parse_args()
    default = SurrogateSettings()
    grid = [{"judge_seeds_below": a, "misleading_below": b} for a, b in itertools.product(SEEDS_BELOW, MISLEADING_BELOW)]
    defaults = {"judge_seeds_below": default.judge_seeds_below, "misleading_below": default.misleading_below}
    if defaults not in grid:  # the defaults are always measured, to compare with
        grid.append(defaults)
    at_default = grid.index(defaults)
    files = sorted(str(f) for k in KERNELS for f in Path(args.datasets).glob(f"{k}_*.json.gz"))
    datasets = [load_dataset(f) for f in files]
    pairs = [(files[t], files[s]) for t, s in same_kernel_pairs(datasets)]
    kernel = {f: Path(f).name.split("_")[0] for f in files}
    name = lambda f: Path(f).name.removesuffix(".json.gz")
    targets = sorted({t for t, _ in pairs})
    # the cold search: the surrogate with the default settings and no source (auto's choice here)
    jobs = [(t, "", r, {"judge_after": default.judge_after}, -1) for t in targets for r in range(args.repeats)]
    jobs += [(t, s, r, g, i) for i, g in enumerate(grid) for t, s in pairs for r in range(args.repeats)]
    started = time.monotonic()
    ratios: dict = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for (*_, i), (t, s, seed, got, _) in zip(jobs, pool.map(_one, [j[:4] for j in jobs], chunksize=4)):
            ratios[(i, t, s, seed)] = got
    # diff[i][pair]: the mean over the repeats of warm − cold, at the worse of the budgets
    diff = np.array([[min(np.mean([ratios[(i, t, s, r)][b] - ratios[(-1, t, "", r)][b]
                                   for r in range(args.repeats)]) for b in range(len(BUDGETS)))
                      for t, s in pairs] for i in range(len(grid))])
    met = diff >= -MARGIN
    print("| judge_seeds_below | misleading_below | pairs met (of %d) | worst pair | mean warm − cold |" % len(pairs))
    print("|---|---|---|---|---|")
    for i, g in enumerate(grid):
        worst = int(np.argmin(diff[i]))
        print(f"| {g['judge_seeds_below']} | {g['misleading_below']} | {met[i].sum()} | "
              f"{name(pairs[worst][0])} ← {name(pairs[worst][1])} {diff[i, worst]:+.3f} | {diff[i].mean():+.3f} |")
    print("\n| held out | chosen on the others (seeds, bar) | held-out pairs met, chosen | held-out pairs met, "
          "defaults | held-out worst, chosen |")
    print("|---|---|---|---|---|")
    missed = 0
    for held in KERNELS:
        out = np.array([kernel[t] == held for t, _ in pairs])
        if not out.any():
            continue
        score = [(met[i][~out].sum(), diff[i][~out].mean()) for i in range(len(grid))]
        chosen = max(range(len(grid)), key=lambda i: score[i])
        missed += int((~met[chosen][out]).sum())
        print(f"| {held} ({out.sum()} pairs) | {grid[chosen]['judge_seeds_below']}, {grid[chosen]['misleading_below']} | "
              f"{met[chosen][out].sum()} | {met[at_default][out].sum()} | {diff[chosen][out].min():+.3f} |")
    print(f"\n{len(jobs)} searches, {args.repeats} repeats, {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
