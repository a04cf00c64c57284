"""The evaluated configs of one shape × variant as columns: what the insights read.

A ``Table`` is built from a database's standing results (``from_standing``) or from a
recorded dataset (``from_dataset``) alike, so that every analysis runs on either. Pruned
configs are left out: a known constraint rejected them, they are no failure. Alongside
the columns, a ``Contest``: the configs as they compare for BEST, each value with the
repeated measurements behind it, what the winner's risk is computed from.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..job import config_id
from ..status import Status


@dataclass(frozen=True)
class Contest:
    """The configs that compare for BEST (row -> value as it compares), the repeated
    measurements behind a value (row -> its runs; ``rounds``: row -> the round of each run,
    when runs of one round were taken together, as a confirmation's are), the statistic a
    value is of its runs (``median``: a confirmation's; ``mean``: Kernel Tuner's), and the
    relative spread of one measurement (``noise``: a standard deviation over the value),
    pooled from every config measured more than once, or None when none was."""

    best: int | None
    values: Mapping[int, float]
    runs: Mapping[int, np.ndarray] = field(default_factory=dict)
    rounds: Mapping[int, np.ndarray] = field(default_factory=dict)
    statistic: str = "median"
    noise: float | None = None
    source: str = ""  # what the runs are: "confirmation runs", "recorded repeats", "" (none)


@dataclass(frozen=True)
class Table:
    """One shape × variant's evaluated configs: per knob a column of values, the derived
    values every config has, each config's status and its objective (NaN unless OK), the
    objective's ``direction``, and the ``contest`` for BEST."""

    variant: str
    shape: str
    metric: str
    direction: str
    knobs: tuple[str, ...]
    columns: Mapping[str, np.ndarray]  # knob -> one value per config (object array)
    derived: Mapping[str, np.ndarray]  # derived name -> one value per config (object array)
    statuses: np.ndarray  # the status names, one per config
    values: np.ndarray  # float64; NaN where the config did not end OK with a finite value
    contest: Contest
    configs: tuple[Mapping[str, Any], ...] = ()

    def __len__(self) -> int:
        return len(self.values)

    @property
    def label(self) -> str:
        return f"{self.shape}/{self.variant}" if self.variant else self.shape

    def config(self, row: int) -> dict[str, Any]:
        return {k: _plain(self.columns[k][row]) for k in self.knobs}

    @property
    def ok(self) -> np.ndarray:
        return self.statuses == Status.OK.value

    def take(self, rows: Sequence[int]) -> "Table":
        """The table of some of its configs (in the order given): a part to learn from, the
        rest to check what was learnt on."""
        rows = np.asarray(rows, dtype=np.int64)
        new = {int(r): i for i, r in enumerate(rows)}
        c = self.contest
        contest = Contest(best=new.get(c.best) if c.best is not None else None,
                          values={new[r]: v for r, v in c.values.items() if r in new},
                          runs={new[r]: v for r, v in c.runs.items() if r in new},
                          rounds={new[r]: v for r, v in c.rounds.items() if r in new},
                          statistic=c.statistic, noise=c.noise, source=c.source)
        return Table(self.variant, self.shape, self.metric, self.direction, self.knobs,
                     {k: v[rows] for k, v in self.columns.items()}, {k: v[rows] for k, v in self.derived.items()},
                     self.statuses[rows], self.values[rows], contest,
                     tuple(self.configs[r] for r in rows) if self.configs else ())

    def failures(self) -> dict[str, int]:
        """Status -> configs that failed with it, most first (PRUNED is no failure)."""
        names, counts = np.unique(self.statuses, return_counts=True)
        found = {str(n): int(c) for n, c in zip(names, counts) if Status(str(n)).is_failure}
        return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _column(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def from_standing(standing, measurements: Sequence = (), knobs: Sequence[str] | None = None,
                  noise: float | None = None) -> Table:
    """A database's shape × variant: its standing results (``store.standings.Standing``),
    pruned ones left out; the contest as the standings compare (confirmed medians where a
    confirmation named a BEST, else single measurements), the confirmation runs behind each
    median (``measurements``: ``verify.confirm.counted_runs``' (Measurement, round) pairs
    of this shape × variant). ``noise``: the spread of one measurement when none of this
    shape's configs was measured more than once (another shape's, say)."""
    results = [r for r in standing.results if r.status is not Status.PRUNED]
    names = list(knobs) if knobs else list(dict.fromkeys(k for r in results for k in r.params))
    names = [k for k in names if all(k in r.params for r in results)]
    columns = {k: _column([r.params[k] for r in results]) for k in names}
    derived_names = [k for k in dict.fromkeys(k for r in results for k in r.derived)
                     if k not in columns and all(k in r.derived for r in results)]
    derived = {k: _column([r.derived[k] for r in results]) for k in derived_names}
    metric = standing.objective.metric
    values = np.array([np.nan if (v := r.value(metric)) is None else v for r in results], dtype=np.float64)
    row_of = {config_id(r.params): i for i, r in enumerate(results)}
    compared = {row_of[cid]: v.value for cid, v in standing.values().items() if cid in row_of}
    best = standing.best()
    best_row = row_of.get(config_id(best.params)) if best is not None else None
    runs: dict[int, list[float]] = {}
    rounds: dict[int, list[int]] = {}
    for m, together in measurements:
        row = row_of.get(config_id(m.params))
        if row is None or m.status is not Status.OK or m.value is None or not math.isfinite(m.value):
            continue
        runs.setdefault(row, []).append(float(m.value))
        rounds.setdefault(row, []).append(together)
    confirmed = standing.confirmed
    if confirmed:  # only confirmed medians compare: their runs are the ones behind them
        runs = {r: v for r, v in runs.items() if r in compared}
    else:
        runs, rounds = {}, {}
    own = pooled_noise(runs.values())
    contest = Contest(
        best=best_row, values=compared,
        runs={r: np.asarray(v) for r, v in runs.items() if len(v) > 1},
        rounds={r: np.asarray(rounds[r]) for r, v in runs.items() if len(v) > 1},
        statistic="median", noise=own if own is not None else noise,
        source="confirmation runs" if confirmed else "")
    return Table(standing.variant, standing.shape, metric, standing.objective.direction, tuple(names), columns,
                 derived, np.array([r.status.value for r in results]), values, contest,
                 tuple(r.params for r in results))


def from_dataset(dataset) -> Table:
    """A recorded dataset (``replay.Dataset``): its configs, statuses and times (to
    minimise); the contest over every valid config, each time the mean of its recorded
    repeats."""
    n = len(dataset)
    columns = {}
    for j, p in enumerate(dataset.params):
        levels = _column(list(p.values))
        columns[p.name] = levels[dataset.rows[:, j]] if n else _column([])
    values = np.array(dataset.values, dtype=np.float64)
    ok = ~np.isnan(values)
    compared = {int(i): float(values[i]) for i in np.flatnonzero(ok)}
    best = int(np.nanargmin(values)) if ok.any() else None
    runs = {}
    if dataset.repeats is not None:
        runs = {i: dataset.repeats[i] for i in compared if len(dataset.repeats[i]) > 1}
    contest = Contest(best=best, values=compared, runs=runs, statistic="mean",
                      noise=pooled_noise(runs.values()), source="recorded repeats" if runs else "")
    return Table("", dataset.name, "time", "min", tuple(dataset.names), columns, {},
                 np.array([s.value for s in dataset.statuses]), values, contest)


def pooled_noise(runs) -> float | None:
    """The typical relative spread of one measurement: the median, over configs measured at
    least twice, of the standard deviation of their runs over their mean; None when none was."""
    stats = spreads(dict(enumerate(runs)))
    relative = [sd / abs(mean) for sd, _, mean in stats.values() if abs(mean) > 0]
    return statistics.median(relative) if relative else None


def spreads(runs: Mapping[int, Any]) -> dict[int, tuple[float, int, float]]:
    """Key -> (standard deviation, number, mean) of the runs of each key with at least two
    finite runs, computed a length of runs at a time."""
    by_length: dict[int, list[tuple[int, np.ndarray]]] = {}
    for key, v in runs.items():
        v = np.asarray(v, dtype=np.float64)
        if len(v) > 1 and np.all(np.isfinite(v)):
            by_length.setdefault(len(v), []).append((key, v))
    out = {}
    for n, items in by_length.items():
        m = np.stack([v for _, v in items])
        sd, mean = m.std(axis=1, ddof=1), m.mean(axis=1)
        out.update({k: (float(s), n, float(u)) for (k, _), s, u in zip(items, sd, mean)})
    return out
