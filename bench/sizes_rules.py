"""Size rules replayed on measured values (no GPU): which config each rule would pick at the
untuned sizes of a ``bench/sizes_sgemm.py --cross K`` run, scored against what was measured
there (docs/benchmarks.md, "Configs for sizes never tuned").

    python bench/sizes_rules.py OUT/matrix.json

``matrix.json`` holds, for every tuned shape (``tuned*``) and untuned size (``at*``), its
sizes and every config's value there: with ``--cross K`` each tuned shape's K best were
measured at every tuned shape and untuned size, so a rule that chooses among them can be
scored at each untuned size against that size's best (the best of everything measured
there, its separate sweep included). The rules, on log-size axes:

* ``nearest``: the nearest tuned shape's best (what ``ksweep select`` ships);
* ``weighted k=2``: of the configs measured at the two nearest tuned shapes, the least mean
  loss there, each shape weighed by 1 / distance (``p=2``: 1 / distance²; ``k=all``: every
  tuned shape);
* ``worse of 2``: the least of the larger loss at the two nearest.

A size at a tuned shape (distance 0) takes its best, whatever the rule.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ksweep.export.robust import loss  # noqa: E402


def axes_of(matrix: dict) -> list[str]:
    return sorted({name for shape in matrix.values() for name in shape["sizes"]})


def place(sizes: dict, axes: list[str]) -> list[float]:
    return [math.log(float(sizes[a])) if float(sizes[a]) > 0 else 0.0 for a in axes]


def best_of(values: dict, direction: str) -> str:
    return (min if direction == "min" else max)(values, key=values.get)


def choose(tuned: dict, at: list[float], rule: str, k: int | None, p: int, direction: str) -> str:
    """The config ``rule`` picks at the place ``at`` among the tuned shapes' measured configs."""
    near = sorted((math.dist(at, shape["at"]), name) for name, shape in tuned.items())
    first = tuned[near[0][1]]
    if rule == "nearest" or near[0][0] == 0.0:
        return first["best"]
    near = near[:k] if k else near
    picked, score = first["best"], None
    for cid in [first["best"], *sorted({c for s in tuned.values() for c in s["values"]})]:
        losses = [tuned[name]["losses"].get(cid) for _, name in near]
        if any(x is None for x in losses):
            continue
        if rule == "weighted":
            weights = [1.0 / d ** p for d, _ in near]
            s = sum(w * x for w, x in zip(weights, losses)) / sum(weights)
        else:  # worse
            s = max(losses)
        if score is None or s < score - 1e-12:
            picked, score = cid, s
    return picked


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("matrix", help="matrix.json of a bench/sizes_sgemm.py --cross run")
    a = p.parse_args()
    with open(a.matrix) as f:
        matrix = json.load(f)
    axes = axes_of(matrix)
    direction = next(iter(matrix.values()))["direction"]
    tuned = {}
    for name, shape in matrix.items():
        if name.startswith("tuned") and shape["values"]:
            best = best_of(shape["values"], direction)
            tuned[name] = {"at": place(shape["sizes"], axes), "values": shape["values"], "best": best,
                           "losses": {c: loss(v, shape["values"][best], direction) for c, v in shape["values"].items()}}
    untuned = sorted((n for n in matrix if n.startswith("at") and matrix[n]["values"]), key=lambda n: int(n[2:]))
    rules = [("nearest", None, 1), ("weighted", 2, 1), ("weighted", 2, 2), ("weighted", None, 2), ("worse", 2, 1)]
    print("| rule | within 5% | worst loss | loss at each untuned size |")
    print("|---|---|---|---|")
    for rule, k, power in rules:
        losses = []
        for name in untuned:
            values = matrix[name]["values"]
            cid = choose(tuned, place(matrix[name]["sizes"], axes), rule, k, power, direction)
            ref = values[best_of(values, direction)]
            losses.append(loss(values[cid], ref, direction) if cid in values else math.nan)
        label = {"nearest": "nearest", "worse": f"worse of {k}"}.get(rule, f"weighted k={k or 'all'} p={power}")
        scored = [x for x in losses if not math.isnan(x)]
        print(f"| {label} | {sum(x <= 0.05 for x in scored)} of {len(untuned)} | "
              f"{100 * max(scored):.1f}% | {' '.join('-' if math.isnan(x) else f'{100 * x:.1f}' for x in losses)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
