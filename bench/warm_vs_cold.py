"""Warm start against a cold start on every pair of the recorded datasets (docs/benchmarks.md,
"Warm start never worse than cold"): each dataset searched cold and warm-started from each
other dataset of its kernel, by ``auto`` (the default strategy), at budgets 25 and 50.

    OPENBLAS_NUM_THREADS=1 python bench/warm_vs_cold.py ../shared/datasets --repeats 30
        [--settings '{"judge_after": 8}']

Prints one Markdown row per ordered pair (target ← source): the mean ratio (optimum / best
found) of the cold and of the warm search at each budget, warm minus cold with its standard
error (the repeats paired by seed), the repeats that fell back to a cold search (the source
was judged misleading), and whether warm ≥ cold − 0.02 at both budgets; then the mean over
the pairs. Repeat r uses seed r, the same for the cold and the warm search (and so the same
random start). Exits 1 when some pair misses the target.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ksweep.replay import ReplaySpace, load_dataset, replay
from ksweep.replay.bench import same_kernel_pairs
from ksweep.replay.stats import ratio_curve
from ksweep.strategies import make_strategy
from ksweep.strategies.base import Budget
from ksweep.strategies.surrogate import SurrogateSettings, SurrogateStrategy
from ksweep.warm.sources import dataset_prior

KERNELS = ("dedispersion", "convolution", "gemm")
BUDGETS = (25, 50)
MARGIN = 0.02
_DATA: dict = {}


def _dataset(path: str):
    if path not in _DATA:
        _DATA[path] = load_dataset(path)
    return _DATA[path]


def _one(job):
    """(target, source, seed, ratio at each budget, whether the search fell back to cold)."""
    target, source, seed, settings = job
    data = _dataset(target)
    prior = None
    if source:
        if ("prior", source) not in _DATA:
            _DATA[("prior", source)] = dataset_prior(_dataset(source))
        prior = _DATA[("prior", source)]
    space = ReplaySpace(data)
    if settings:  # the strategy auto runs here (every recorded space is larger than the budget), other settings
        strategy = SurrogateStrategy(space, seed=seed, settings=SurrogateSettings(**settings), prior=prior)
    else:
        strategy = make_strategy("auto", space, seed=seed, budget_hint=max(BUDGETS), prior=prior)
    values = replay(strategy, space, Budget(max_evals=max(BUDGETS))).values
    curve = ratio_curve(values, data.optimum)
    inner = getattr(strategy, "inner", strategy)
    fell_back = bool(getattr(inner, "fell_back", False))
    return target, source, seed, [float(curve[min(b, len(curve)) - 1]) for b in BUDGETS], fell_back


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("datasets", help="the folder of the recorded datasets")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--settings", default="", help="the surrogate's settings (SurrogateSettings fields as JSON) "
                                                   "instead of auto's")
    args = p.parse_args()
    settings = json.loads(args.settings) if args.settings else {}
    files = sorted(str(f) for k in KERNELS for f in Path(args.datasets).glob(f"{k}_*.json.gz"))
    datasets = [load_dataset(f) for f in files]
    pairs = [(files[t], files[s]) for t, s in same_kernel_pairs(datasets)]
    targets = sorted({t for t, _ in pairs})
    jobs = [(t, "", r, settings) for t in targets for r in range(args.repeats)]
    jobs += [(t, s, r, settings) for t, s in pairs for r in range(args.repeats)]
    started = time.monotonic()
    runs: dict = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for t, s, seed, ratios, fell in pool.map(_one, jobs, chunksize=4):
            runs.setdefault((t, s), {})[seed] = (ratios, fell)
    name = lambda f: Path(f).name.removesuffix(".json.gz")
    head = " | ".join(f"cold {b} | warm {b}" for b in BUDGETS)
    print(f"| target ← source | {head} | warm − cold ± s.e. ({', '.join(map(str, BUDGETS))}) | fell back | "
          f"warm ≥ cold − {MARGIN} |")
    print("|---" * (2 * len(BUDGETS) + 4) + "|")
    missed, means = 0, []
    for t, s in pairs:
        seeds = sorted(runs[(t, s)])
        cold_runs = np.array([runs[(t, "")][r][0] for r in seeds])
        warm_runs = np.array([runs[(t, s)][r][0] for r in seeds])
        cold, warm = cold_runs.mean(axis=0), warm_runs.mean(axis=0)
        se = (warm_runs - cold_runs).std(axis=0, ddof=1) / np.sqrt(len(seeds)) if len(seeds) > 1 else 0 * cold
        fell = sum(runs[(t, s)][r][1] for r in seeds)
        ok = bool((warm >= cold - MARGIN).all())
        missed += not ok
        means.append((cold, warm))
        cells = " | ".join(f"{c:.3f} | {w:.3f}" for c, w in zip(cold, warm))
        diffs = ", ".join(f"{w - c:+.3f} ± {e:.3f}" for c, w, e in zip(cold, warm, se))
        print(f"| {name(t)} ← {name(s)} | {cells} | {diffs} | {fell} of {len(seeds)} | "
              f"{'yes' if ok else '**no**'} |")
    cold = np.mean([c for c, _ in means], axis=0)
    warm = np.mean([w for _, w in means], axis=0)
    cells = " | ".join(f"{c:.3f} | {w:.3f}" for c, w in zip(cold, warm))
    diffs = ", ".join(f"{w - c:+.3f}" for c, w in zip(cold, warm))
    print(f"| mean of the {len(pairs)} pairs | {cells} | {diffs} | | {len(pairs) - missed} of {len(pairs)} |")
    print(f"\n{len(jobs)} searches, {args.repeats} repeats, {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
