"""Compare settings of the warm-started surrogate on the recorded pairs (docs/benchmarks.md,
"Warm start", the table of settings): every ordered pair of datasets of one kernel, the
target searched with the source's recorded results as its prior.

    python bench/warm_settings.py ../shared/datasets --repeats 10 --budget 50 \
        --settings '{"warm_flips": false}'

Prints, per pair, the mean ratio at 25 and at the budget and the median evals-to-5%, then
the mean ratio at 25 and the pairs within 5% in a median of at most 15 evaluations, over
all pairs and with each dataset left out (every pair that has it as target or source).
"""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ksweep.replay import ReplaySpace, load_dataset, replay
from ksweep.replay.bench import same_kernel_pairs
from ksweep.replay.stats import evals_to_within, ratio_curve
from ksweep.strategies.base import Budget
from ksweep.strategies.surrogate import SurrogateSettings, SurrogateStrategy
from ksweep.warm.sources import dataset_prior

KERNELS = ("dedispersion", "convolution", "gemm")
_DATA: dict = {}


def _one(job):
    target, source, seed, budget, settings = job
    if target not in _DATA:
        _DATA[target] = load_dataset(target)
    if ("prior", source) not in _DATA:
        _DATA[("prior", source)] = dataset_prior(load_dataset(source))
    space = ReplaySpace(_DATA[target])
    s = SurrogateStrategy(space, seed=seed, settings=SurrogateSettings(**settings), prior=_DATA[("prior", source)])
    return target, source, replay(s, space, Budget(max_evals=budget)).values


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("datasets", help="the folder of the recorded datasets")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--budget", type=int, default=50)
    p.add_argument("--settings", default="{}", help="SurrogateSettings fields as JSON")
    p.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    args = p.parse_args()
    files = sorted(f for k in KERNELS for f in Path(args.datasets).glob(f"{k}_*.json.gz"))
    datasets = [load_dataset(f) for f in files]
    pairs = [(str(files[t]), str(files[s])) for t, s in same_kernel_pairs(datasets)]
    optimum = {str(f): d.optimum for f, d in zip(files, datasets)}
    settings = json.loads(args.settings)
    jobs = [(t, s, r, args.budget, settings) for t, s in pairs for r in range(args.repeats)]
    runs: dict = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for t, s, values in pool.map(_one, jobs, chunksize=2):
            runs.setdefault((t, s), []).append(values)
    name = lambda f: Path(f).name.removesuffix(".json.gz")
    at25, e5 = {}, {}
    for (t, s), vs in sorted(runs.items()):
        opt = optimum[t]
        r25 = float(np.mean([ratio_curve(v[:25], opt)[-1] for v in vs]))
        rb = float(np.mean([ratio_curve(v, opt)[-1] for v in vs]))
        e = np.median([evals_to_within(v, opt) or np.inf for v in vs])
        at25[(name(t), name(s))] = r25
        e5[(name(t), name(s))] = e
        print(f"{name(t):28s} <- {name(s):28s} r25 {r25:.3f} r{args.budget} {rb:.3f} med-e5 {e:5.1f}")
    met = lambda keys: sum(e5[k] <= 15 for k in keys)
    print(f"mean r25 over {len(at25)} pairs: {np.mean(list(at25.values())):.3f}, median evals-to-5% <= 15 on "
          f"{met(e5)} of {len(e5)}  settings {settings}")
    for d in sorted({name(f) for f in files}):
        rest = [k for k in at25 if d not in k]
        print(f"  without {d}: {np.mean([at25[k] for k in rest]):.3f}, <= 15 on {met(rest)} of {len(rest)}")


if __name__ == "__main__":
    main()
