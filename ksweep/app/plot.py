"""``ksweep plot``: the results a heat-map or a convergence plot draws (``report/plot.py``
draws them), the metric and which way is better, and the store's BEST a heat-map marks."""

from __future__ import annotations

from ..spec.objectives import metric_direction
from ..store import standings
from ..store.sqlite import Store
from .outputs import Output, checked_output, db_inputs
from .report import check_names


def image_output(out: str, db: str, *, force: bool = False, option: str = "--out") -> Output:
    """The image a plot of ``db`` is drawn to, checked before the database is read: an image
    name in a folder that can be written; an existing file only with ``force``, never the
    database, its spec or a source."""
    return checked_output(out, option=option, force=force, reads=db_inputs(db), image=True)


def to_plot(db: str, *, shape: str | None = None, variant: str | None = None, metric: str | None = None,
            direction: str | None = None):
    """(results, metric, direction) of ``db``, read in one transaction: ``metric`` else the
    sweep's objective; ``direction`` else metric_direction's rule over the sweep's objectives."""
    with Store(db, create=False) as store, store.snapshot():
        check_names(store, shape, variant)
        results = store.results(variant=variant, shape=shape)
        objective, objectives = store.objective(), store.objectives()
    metric = metric or objective.metric
    return results, metric, direction or metric_direction(metric, (objective, *objectives))


def marked_best(db: str, metric: str, *, shape: str | None = None, variant: str | None = None) -> dict:
    """(variant, shape) -> (result, value, confirmed) of the store's BEST of each shape, as the
    table marks it (a confirmed median where confirmed), when ``metric`` is the objective's;
    empty otherwise."""
    with Store(db, create=False) as store:
        found = standings.read(store, variant, shape)
    best = {}
    if metric == found.objective.metric:
        for key, s in found.items():
            r = s.best()
            v = s.value(r, singles=True) if r is not None else None
            if v is not None:
                best[key] = (r, v.value, v.confirmed)
    return best
