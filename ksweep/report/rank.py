"""How reports group and annotate ranked results (pure): a table per shape × variant × GPU
model × phase, why an OK row has no rank, and which results went unchecked. The order
itself, and which result is best, are the store's (``store/ranking.py``,
``store/standings.py``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable

from ..result import Result
from ..verify.checks import unverified


def group_results(results: Iterable[Result]) -> dict[tuple[str, str, str | None, str | None], list[Result]]:
    """Results per (variant, shape, GPU model, phase): runs on different GPU models are never
    ranked together, and a phased search gets a table per phase (tier1, tier2); its rows of
    no phase (the reference config, configs another shape's search started from) join the
    first phase's table."""
    results = list(results)
    groups: dict[tuple[str, str, str | None, str | None], list[Result]] = defaultdict(list)
    gpu_of: dict[tuple[str, str], set] = defaultdict(set)
    for r in results:
        if r.gpu_name:
            gpu_of[(r.variant, r.shape)].add(r.gpu_name)

    def gpu(r: Result) -> str | None:
        return r.gpu_name if len(gpu_of[(r.variant, r.shape)]) > 1 else None

    tiers: dict[tuple, list[str]] = defaultdict(list)
    for r in results:
        if r.phase and r.phase.startswith("tier"):
            tiers[(r.variant, r.shape, gpu(r))].append(r.phase)
    for r in results:
        own = tiers.get((r.variant, r.shape, gpu(r)))
        phase = r.phase if r.phase and r.phase.startswith("tier") else (min(own) if own else None)
        groups[(r.variant, r.shape, gpu(r), phase)].append(r)
    return dict(groups)


def unranked_reason(r: Result, metric: str) -> str:
    """Why an OK row has no rank: its objective is missing or not a finite number."""
    v = r.metrics.get(metric)
    if v is None:
        return f"no {metric}"
    if isinstance(v, float) and not math.isfinite(v):
        return f"{metric}={v:g} is not a finite number"
    return f"{metric}={v!r} is not a number"


def unverified_notes(results: Iterable[Result]) -> list[str]:
    """One line per shape × variant with OK results whose check could not run because the
    reference config failed: among them a wrong result ranks as a right one."""
    counts: dict[tuple[str, str], int] = {}
    for r in results:
        if unverified(r.status, r.message):
            counts[(r.variant, r.shape)] = counts.get((r.variant, r.shape), 0) + 1
    return [f"{shape}/{variant}: {n} OK result{'s' * (n != 1)} unverified: the reference (defaults) config failed, "
            f"so no result was checked against it and a wrong one can rank best (make the default config run, "
            f"then ksweep run --rerun failed)" for (variant, shape), n in counts.items()]
