"""ksweep insights on the recorded datasets (docs/benchmarks.md, "Insights on the recorded
datasets"): how much of each recording's failures its suggested constraints prune, and how
much of its OK configs with them, and how long the command takes.

    python3 bench/insights_datasets.py DATASETS [--repeats 5]

DATASETS is the folder of the recorded datasets (its *.json.gz files). Per dataset:
- *pruned*: the `ksweep insights --constraints` expressions put into a ksweep space of the
  recording's parameters (what `plan` builds from a spec they are appended to), and each
  recorded config looked up in it: the failed configs it no longer holds, and the OK ones;
- *held out*: the rules learnt on a random half of the configs (seed 0), checked on the
  other half, both ways: how well they say what an unseen config will do;
- *seconds*: the wall time of `python3 -m ksweep insights FILE --json` in a fresh process
  (start-up, reading the file, every analysis), the median and range of --repeats runs.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ksweep.app.insights import constraints, insights  # noqa: E402
from ksweep.insights.rules import evaluate, rules  # noqa: E402
from ksweep.replay import load_dataset  # noqa: E402
from ksweep.space.space import Space  # noqa: E402


def pruned(path: Path) -> tuple[int, int, int, int, int]:
    """(failed configs pruned, failed, OK configs pruned, OK, constraints)."""
    done = insights(str(path))
    blocks = constraints(done)
    dataset = load_dataset(path)
    space = Space({p.name: p.values for p in dataset.params}, [b["expr"] for b in blocks])
    failed = ok = failed_out = ok_out = 0
    for i in range(len(dataset)):
        kept = dataset.config(i) in space
        if dataset.statuses[i].is_failure:
            failed += 1
            failed_out += not kept
        else:
            ok += 1
            ok_out += not kept
    return failed_out, failed, ok_out, ok, len(blocks)


def held_out(path: Path, seed: int = 0) -> tuple[int, int, int, int]:
    """(failed pruned, failed, OK pruned, OK) over the two halves, each checked with the rules
    learnt on the other."""
    from ksweep.insights.table import from_dataset

    table = from_dataset(load_dataset(path))
    order = np.random.default_rng(seed).permutation(len(table))
    halves = np.sort(order[: len(order) // 2]), np.sort(order[len(order) // 2:])
    out = np.zeros(4, dtype=int)
    for learn, check in ((halves[0], halves[1]), (halves[1], halves[0])):
        a, b = table.take(learn), table.take(check)
        cut = np.zeros(len(b), dtype=bool)
        for r in rules(a):
            for t in r.terms:
                cut |= evaluate(b, t.text)
        failed = np.array([s not in ("OK", "PRUNED") for s in b.statuses])
        out += [int((cut & failed).sum()), int(failed.sum()), int((cut & b.ok).sum()), int(b.ok.sum())]
    return tuple(int(x) for x in out)


def seconds(path: Path, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ksweep", "insights", str(path), "--json"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("datasets", help="the folder of the recorded datasets")
    p.add_argument("--repeats", type=int, default=5, help="timed runs of the command per dataset (default 5)")
    args = p.parse_args()
    files = sorted(Path(args.datasets).glob("*.json.gz"))
    print("| dataset | configs | failed | constraints | failed pruned | OK pruned | held out: failed pruned "
          "| held out: OK pruned | seconds, median (range) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for f in files:
        fo, fn, oo, on, n = pruned(f)
        hf, hn, ho, hon = held_out(f) if fn else (0, 0, 0, 0)
        t = seconds(f, args.repeats)
        pct = (lambda a, b: f"{a:,}/{b:,} ({100 * a / b:.1f}%)" if b else "-")
        name = f.name.removesuffix(".json.gz")
        print(f"| {name} | {fn + on:,} | {fn:,} | {n} | {pct(fo, fn)} | {pct(oo, on)} | {pct(hf, hn)} "
              f"| {pct(ho, hon)} | {statistics.median(t):.2f} ({min(t):.2f}–{max(t):.2f}) |", flush=True)


if __name__ == "__main__":
    main()
