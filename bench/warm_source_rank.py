"""How much a source recording can tell about a target's optimum, for each warm-start pair
(issue 19), from the recordings alone. These are not bounds on a warm-started search, which
also varies the source's best configs and learns from the target's own results (docs/
benchmarks.md, "Warm start", shows pairs it solves far earlier than the ranks below).

    python bench/warm_source_rank.py ../shared/datasets            # the 14 same-kernel pairs
    python bench/warm_source_rank.py ../shared/datasets --markdown

For each ordered pair target <- source of recordings of the same kernel, on the parameters
both share (a parameter the source lacks is taken at its best over the target's values,
since the source cannot tell it apart), each shared-parameter combination gets the source's
best time and the target's best time. Printed per pair:
- Pearson and Spearman correlation of the two log-times over the combinations both hold
  (Spearman's ranks break ties by order, not by averaging);
- the rank, in the source's order (best first), of the best-ranked combination that holds a
  target config within 5% of the target's optimum: a search that follows the source meets
  the first such config no earlier than there;
- the best target ratio (optimum / time) among the source's top 5, 15 and 25 combinations,
  each at its best setting of the parameters the source lacks: what following the source
  alone could give after that many combinations (and more evaluations than that, when the
  source lacks parameters).
- how many of the target's configs are within 5% of its optimum, and the expected number of
  evaluations a uniform random search without repetition needs to meet one ((n+1)/(g+1)).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ksweep.replay.bench import load_all, same_kernel_pairs
from ksweep.replay.dataset import Dataset

TOLERANCE = 0.05


def best_by_key(d: Dataset, names: list[str]) -> dict[tuple, float]:
    out: dict[tuple, float] = {}
    index = [d.names.index(n) for n in names]
    for row, value in zip(d.rows, d.values):
        if np.isnan(value):
            continue
        key = tuple(d.params[i].values[row[i]] for i in index)
        if value < out.get(key, np.inf):
            out[key] = float(value)
    return out


def rank_stats(target: Dataset, source: Dataset) -> dict:
    shared = [n for n in target.names if n in source.names]
    src = best_by_key(source, shared)
    tgt = best_by_key(target, shared)
    order = sorted(src, key=src.get)
    common = [k for k in src if k in tgt]
    a = np.log([tgt[k] for k in common])
    b = np.log([src[k] for k in common])
    ranks_a = np.argsort(np.argsort(a))
    ranks_b = np.argsort(np.argsort(b))
    optimum = target.optimum
    good_keys = {k for k, v in tgt.items() if v <= optimum * (1 + TOLERANCE)}
    first = next((r + 1 for r, k in enumerate(order) if k in good_keys), None)
    top = {}
    for k in (5, 15, 25):
        ratios = [optimum / tgt[key] for key in order[:k] if key in tgt]
        top[k] = max(ratios) if ratios else float("nan")
    n, g = int(target.ok.sum()), target.within(TOLERANCE)
    return {
        "pair": f"{target.name} <- {source.name}",
        "shared": len(shared),
        "of": len(target.names),
        "pearson": float(np.corrcoef(a, b)[0, 1]),
        "spearman": float(np.corrcoef(ranks_a, ranks_b)[0, 1]),
        "first_good_rank": first,
        "source_keys": len(order),
        "top": top,
        "within": g,
        "random_expected": (n + 1) / (g + 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, help="the folder of the recorded datasets (../shared/datasets)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    paths = sorted(args.folder.glob("*.json.gz"))
    datasets = load_all(paths)
    rows = [rank_stats(datasets[t], datasets[s]) for t, s in same_kernel_pairs(datasets)]
    head = ("target <- source", "shared params", "Pearson", "Spearman", "first source rank within 5%",
            "best ratio in source top 5 / 15 / 25", "target configs within 5%", "random: expected evals")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    for r in rows:
        cells = (r["pair"], f"{r['shared']} of {r['of']}", f"{r['pearson']:.2f}", f"{r['spearman']:.2f}",
                 f"{r['first_good_rank']} of {r['source_keys']}",
                 " / ".join(f"{r['top'][k]:.3f}" for k in (5, 15, 25)), str(r["within"]),
                 f"{r['random_expected']:.0f}")
        print(("| " + " | ".join(cells) + " |") if args.markdown else "  ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
