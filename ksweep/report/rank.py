"""Ranking of results (pure): the best valid first, then failures, then pruned configs.

Only a finite objective ranks: an OK row whose value is NaN or infinite (stored by an
older ksweep, which let ``ms=nan`` or ``gflops=inf`` pass) comes after every ranked
row and before the failures; it is never the best.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable

from ..job import config_id
from ..result import Result
from ..status import FAILURE_ORDER, Status
from ..verify import unverified

_FAIL_RANK = {s: i for i, s in enumerate(FAILURE_ORDER)}


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


def finite_value(r: Result, metric: str) -> float | None:
    """The objective's value of a config that passed everything, if it is a finite number."""
    try:
        v = r.value(metric)
    except (TypeError, ValueError):  # not a number at all
        return None
    return v if v is not None and math.isfinite(v) else None


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


def rank(results: Iterable[Result], metric: str, direction: str = "min") -> list[Result]:
    sign = 1.0 if direction == "min" else -1.0

    def key(r: Result):
        v = finite_value(r, metric)
        if v is not None:
            return (0, sign * v, "")
        if r.status is Status.OK:
            return (1, 0.0, "")
        return (2 + _FAIL_RANK.get(r.status, 0), 0.0, r.message)

    return sorted(results, key=key)


def best(results: Iterable[Result], metric: str, direction: str = "min") -> Result | None:
    ranked = rank(results, metric, direction)
    return ranked[0] if ranked and finite_value(ranked[0], metric) is not None else None


def confirmed_best(results: Iterable[Result], best_id: str | None, metric: str, direction: str = "min"
                   ) -> Result | None:
    """The result of the confirmation's BEST (``best_id``, a config id) when it is among
    ``results`` and OK, else the ranked best: the config report and export show as best."""
    results = list(results)
    if best_id is not None:
        found = next((r for r in results if config_id(r.params) == best_id), None)
        if found is not None and found.status is Status.OK:
            return found
    return best(results, metric, direction)

