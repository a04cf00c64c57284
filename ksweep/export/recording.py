"""One shape × variant × GPU model of a database as a recording (pure): every config with its
time in milliseconds, or why it has none. What a Kernel Tuner cache and a T4 results file
hold (export/kt_cache.py, export/t4.py); both rank by that time, lower is better.

The time is the objective when it is a time to minimise (ms, us, s, ...: converted to
milliseconds), else the first time metric the results carry (an objective such as GFLOP/s
ranks a shape's configs as its time does). A config's time is the median of its
confirmation runs where the confirmation measured it and the objective is that time,
else its single measurement; a config that failed a confirmation run is recorded as a
failed run, as it is never shipped. Pruned configs are recorded as such; failed builds,
which no GPU ran, belong to every GPU model's recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..errors import ExportError
from ..job import config_id
from ..result import Result, time_unit_ms
from ..status import Status
from ..store.ranking import finite_value
from ..store.standings import Standings
from .selection import Entry, measured, only_gpu, select


@dataclass(frozen=True)
class Record:
    result: Result
    status: Status  # the result's, or RUN_ERROR for a config that failed a confirmation run
    time_ms: float | None  # set for OK configs only


@dataclass(frozen=True)
class Recording:
    variant: str
    shape: str
    gpu: str | None
    params: tuple[str, ...]  # the parameter names, in the spec's order
    time_metric: str  # the metric the times come from
    records: tuple[Record, ...]
    best: Entry  # the database's best config of this shape (export/selection.py)

    @property
    def best_time_ms(self) -> float | None:
        return next((x.time_ms for x in self.records if x.result is self.best.result), None)

    def fastest(self) -> Record | None:
        """The config a replay of the recording finds best: the least time (first of equals)."""
        timed = [x for x in self.records if x.time_ms is not None]
        return min(timed, key=lambda x: x.time_ms) if timed else None


def recording(standings: Standings, results: Sequence[Result],
              orders: Mapping[tuple[str, ...], Sequence[str]] | None = None, *, gpu: str | None = None) -> Recording:
    """The recording of the one shape × variant (× GPU model) in ``results`` (of ``standings``); ExportError
    naming the choices when there are several (the caller filters with --shape, --variant
    and ``gpu``)."""
    pairs = list(dict.fromkeys((r.variant, r.shape) for r in results))
    if len(pairs) != 1:
        if not pairs:
            raise ExportError("the database holds no results")
        shown = ", ".join(f"{s} ({v})" for v, s in pairs[:12]) + (" ..." if len(pairs) > 12 else "")
        raise ExportError(f"a Kernel Tuner cache or T4 file holds one shape of one variant; the database has "
                          f"{len(pairs)}: choose with --shape and --variant (shapes: {shown})")
    variant, shape = pairs[0]
    metric, direction = standings.objective.metric, standings.objective.direction
    values = measured(standings, results, singles=True)
    models = list(dict.fromkeys(k[2] for k in values))
    model = only_gpu(values, gpu) if gpu is not None else models[0] if len(models) == 1 else None
    if gpu is None and len(models) > 1:
        raise ExportError(f"shape {shape} was measured on {len(models)} GPU models "
                          f"({', '.join(repr(m) for m in models)}): choose one with --gpu")
    if not values:
        raise ExportError(f"shape {shape} ({variant}): no config ran OK with a finite {metric}: nothing to export")
    rows = [r for r in results if r.gpu_name in (model, None)]
    time_metric = _time_metric(rows, metric, direction)
    scale = time_unit_ms(time_metric)
    shipped = values[(variant, shape, model)]
    records = []
    for r in rows:
        cid = config_id(r.params)
        if r.status is Status.OK and cid not in shipped:
            if finite_value(r, metric) is None:  # an older database's NaN: nothing measured
                records.append(Record(r, Status.NO_RESULT, None))
            else:  # it failed a confirmation run
                records.append(Record(r, Status.RUN_ERROR, None))
            continue
        if r.status is not Status.OK:
            records.append(Record(r, r.status, None))
            continue
        value = shipped[cid][1]
        raw = value if time_metric == metric else finite_value(r, time_metric)
        if raw is None:
            records.append(Record(r, Status.NO_RESULT, None))
        else:
            records.append(Record(r, Status.OK, raw * scale))
    names = tuple((orders or {}).get((variant, shape)) or dict.fromkeys(k for r in rows for k in r.params))
    best = select(standings, results=rows).entries[0]
    return Recording(variant, shape, model, names, time_metric, tuple(records), best)


def _time_metric(rows: Sequence[Result], metric: str, direction: str) -> str:
    if direction == "min" and time_unit_ms(metric) is not None:
        return metric
    for r in rows:
        for k in r.metrics:
            if r.status is Status.OK and time_unit_ms(k) is not None:
                return k
    raise ExportError(f"Kernel Tuner caches and T4 files record a time per config: the objective {metric!r} "
                      f"is not a time to minimise and the results carry no time metric (ms, us, s, ...)")
