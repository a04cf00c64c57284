"""``ksweep history``: the best result per source revision of each shape × variant, in time
order, changes and regressions marked (``report/history.py`` computes and renders)."""

from __future__ import annotations

from ..report.history import timeline
from ..store.sqlite import Store
from .report import check_names


def history(db: str, *, shape: str | None = None, variant: str | None = None,
            tolerance: float = 0.02) -> tuple[dict, str]:
    """(the timeline of each (variant, shape), the objective's metric) of ``db``: a revision
    slower than the one before by more than ``tolerance`` (a fraction), beyond noise, is a
    regression."""
    with Store(db, create=False) as store:
        check_names(store, shape, variant)
        rows = store.history(variant, shape)
        measurements = store.measurements(variant, shape)
        objective = store.objective()
    return timeline(rows, measurements, objective.metric, objective.direction, tolerance), objective.metric
