"""The benchmark's tables as rows of text: one per dataset (or warm-started pair), and the
means over the datasets and over the pairs.

Pure formatting, shared by the terminal report (rich) and the Markdown of docs/benchmarks.md.
A cell reads ``mean / median  evals-to-5% (reached/repeats)``; for the exact random-search
expectation the last part is the probability of getting within 5% in the budget.
"""

from __future__ import annotations

from typing import Sequence

from ..replay.bench import EXACT_RANDOM, BenchRecord, mean_over_datasets


def cell(r: BenchRecord) -> str:
    ratios = f"{r.mean_ratio:.3f} / {r.median_ratio:.3f}"
    if r.dataset == "mean":
        return ratios
    evals = "—" if r.median_evals_to_5pct is None else f"{r.median_evals_to_5pct:g}"
    if r.strategy == EXACT_RANDOM:
        return f"{ratios}  {evals} (p={r.reached_5pct:.0%})"
    return f"{ratios}  {evals} ({r.reached_5pct:g}/{r.repeats})"


def table(records: Sequence[BenchRecord], dataset: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows): strategies down, budgets across."""
    rs = [r for r in records if r.dataset == dataset]
    budgets = sorted({r.budget for r in rs})
    strategies = list(dict.fromkeys(r.strategy for r in rs))
    by = {(r.strategy, r.budget): r for r in rs}
    header = ["strategy", *[f"budget {b}" for b in budgets]]
    rows = [[s, *[cell(by[(s, b)]) if (s, b) in by else "" for b in budgets]] for s in strategies]
    return header, rows


def tables(records: Sequence[BenchRecord]) -> list[tuple[str, list[str], list[list[str]]]]:
    """Every dataset's table, then the mean over the datasets searched cold and the mean over
    the warm-started pairs (each when there are several)."""
    out = []
    names = list(dict.fromkeys(r.dataset for r in records))
    for name in names:
        out.append((name, *table(records, name)))
    for warm, title in ((False, "mean over datasets"), (True, "mean over warm-started pairs")):
        if len({r.dataset for r in records if bool(r.warm_from) == warm}) > 1:
            out.append((title, *table(mean_over_datasets(records, warm), "mean")))
    return out


def markdown(records: Sequence[BenchRecord]) -> str:
    parts = []
    for title, header, rows in tables(records):
        parts.append(f"**{title}**\n")
        parts.append("| " + " | ".join(header) + " |")
        parts.append("|" + "---|" * len(header))
        parts.extend("| " + " | ".join(row) + " |" for row in rows)
        parts.append("")
    return "\n".join(parts)
