"""The order of stored results (pure): the best valid first, then failures, then pruned configs.

Only a finite objective ranks: an OK row whose value is NaN or infinite (stored by an
older ksweep, which let ``ms=nan`` or ``gflops=inf`` pass) comes after every ranked
row and before the failures; it is never the best. This order is the store's: which
result is best (``store/standings.py``) and every table and export rank by it.
"""

from __future__ import annotations

import math
from typing import Iterable

from ..result import Result
from ..status import FAILURE_ORDER, Status

_FAIL_RANK = {s: i for i, s in enumerate(FAILURE_ORDER)}


def finite_value(r: Result, metric: str) -> float | None:
    """The objective's value of a config that passed everything, if it is a finite number."""
    try:
        v = r.value(metric)
    except (TypeError, ValueError):  # not a number at all
        return None
    return v if v is not None and math.isfinite(v) else None


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


def ranked_best(results: Iterable[Result], metric: str, direction: str = "min") -> Result | None:
    """The first of the ranking, when it has a value: the best of single measurements."""
    ranked = rank(results, metric, direction)
    return ranked[0] if ranked and finite_value(ranked[0], metric) is not None else None
