"""What ``ksweep report --html``'s page shows of each shape × variant, as the data its script
reads (pure): the tables (``table.table_groups``: the terminal's rows, order, BEST and TIE),
the heat-map's input (each valid config's knob values and objective), the convergence line
(``plot.convergence``), the Pareto front (``pareto.fronts``) and the history timeline
(``history.timeline``'s points).

Everything is columns of plain JSON values (a value that is not a finite number is null):
a sweep of 20,000 configs is a few hundred kB once the page compresses it.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from ..job import config_id
from ..result import Result
from ..spec.model import Objective
from .history import Point
from .pareto import fronts
from .plot import _order, convergence
from .table import TableGroup, fmt_cell, param_names

PARETO_OTHERS = 2000  # at most this many configs off the front are drawn (evenly chosen)

# the order of the statuses in a table's filter, after the failures' names (alphabetical)
_FIRST = ("BEST", "TIE", "ok", "OK")


def _num(v) -> float | None:
    """A finite number, else None (a bool is 0 or 1: a switch sorts off before on)."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return v
    return None


def table_data(group: TableGroup, confirmation=None) -> dict:
    """One table as columns: ``headers`` (the cells', then STATUS and NOTE), ``cols`` (the
    text of each cell, as the terminal shows it), ``nums`` (column -> the value a column of
    numbers sorts by: the stored one, where the text is rounded), ``status`` (of each row),
    ``note`` (an index into ``notes``, -1 for none)."""
    rows = group.rows
    width = len(group.headers) - 1  # the cells, STATUS apart
    cols = [[row.cells[j] for row in rows] for j in range(width)]
    verdicts = confirmation.verdicts if confirmation is not None else {}
    marked = [verdicts.get(config_id(row.result.params)) for row in rows] if verdicts else [None] * len(rows)
    nums: dict[str, list] = {}
    for j, header in enumerate(group.headers[:width]):
        get = _sort_value(header, group)
        values = [get(row.result, v) for row, v in zip(rows, marked)]
        if any(v is not None for v in values):
            nums[str(j)] = values
    notes: dict[str, int] = {}
    note = [notes.setdefault(row.note, len(notes)) if row.note else -1 for row in rows]
    statuses = list(dict.fromkeys(row.status for row in rows))
    statuses.sort(key=lambda s: (_FIRST.index(s) if s in _FIRST else len(_FIRST) + (s == "PRUNED"), s))
    return {"title": group.title, "headers": [*group.headers, "NOTE"], "params": len(group.names),
            "cols": cols, "nums": nums, "status": [row.status for row in rows], "statuses": statuses,
            "note": note, "notes": list(notes), "confirmation": group.confirmation}


def _sort_value(header: str, group: TableGroup):
    """What a column sorts by, as a function of a row's result and its confirmation's verdict."""
    if header in group.names:
        return lambda r, v: _num(r.params.get(header))
    fixed = {"REGS": lambda r, v: _num(r.regs), "SPILL": lambda r, v: _num(r.spills),
             "SMEM_KB": lambda r, v: _num(r.smem), "CHECKSUM": lambda r, v: _num(r.metrics.get("checksum")),
             "MEDIAN": lambda r, v: _num(v.interval.median) if v is not None and v.interval.n else None,
             "N": lambda r, v: v.interval.n if v is not None and v.interval.n else None,
             "CI95": lambda r, v: _num(v.interval.half_width / abs(v.interval.median))
             if v is not None and v.interval.n >= 2 and v.interval.median else None}
    if header in fixed:
        return fixed[header]
    metric = next((m for m in group.metrics if m.upper() == header), None)
    if metric is None:
        return lambda r, v: None
    return lambda r, v: _num(r.metrics.get(metric))


def heat_data(results: Sequence[Result], names: Sequence[str], metric: str) -> dict:
    """The heat-maps' input, as ``plot.heatmap_grid`` reads the results: every config that
    passed with a finite value of ``metric``, its value, and for each knob (``names``) the
    labels of its values (in the plots' order) and each config's label's index. The script
    takes the best value per pair of labels of the two knobs the reader picks."""
    rows = [r for r in results if r.status.ok and _num(r.metrics.get(metric)) is not None
            and not isinstance(r.metrics.get(metric), bool)]
    knobs = {}
    for name in names:
        values = sorted({r.params.get(name) for r in rows}, key=_order)
        labels = [fmt_cell(v) for v in values]
        index = {v: i for i, v in enumerate(values)}
        knobs[name] = {"labels": labels, "codes": [index[r.params.get(name)] for r in rows]}
    return {"values": [float(r.metrics[metric]) for r in rows], "knobs": knobs,
            "varying": [n for n in names if len(knobs[n]["labels"]) > 1]}


def best_data(best: Result | None, value, names: Sequence[str]) -> dict | None:
    """The store's BEST of a shape × variant (store/standings.py): its knobs' labels, its value
    and whether that is a confirmed median; the heat-map marks its cell."""
    if best is None:
        return None
    return {"labels": {n: fmt_cell(best.params.get(n)) for n in names},
            "value": _num(value.value) if value is not None else None,
            "confirmed": bool(value is not None and value.confirmed),
            "config": " ".join(f"{k}={fmt_cell(v)}" for k, v in best.params.items())}


def convergence_data(results: Iterable[Result], metric: str, direction: str, variant: str, shape: str) -> dict:
    """The best value so far after each evaluation of one shape × variant, in the order the
    sweep stored them (``plot.convergence``), as the steps of its line: the evaluations at
    which it changed (from 1) and the last one, with the value from there on (None before
    the first success). ``n``: the evaluations."""
    series = [_num(v) for v in convergence(results, metric, direction).get((variant, shape), [])]
    xs, ys = [], []
    for i, v in enumerate(series):
        if i == 0 or v != series[i - 1] or i == len(series) - 1:
            xs.append(i + 1)
            ys.append(v)
    return {"x": xs, "y": ys, "n": len(series)}


def pareto_data(results: Sequence[Result], objectives: Sequence[Objective],
                param_order: Mapping | None, variant: str, shape: str) -> list[dict]:
    """One chart per front of this shape × variant (per GPU model and phase, as the tables):
    the front's configs on the first two objectives with their knobs, and at most
    ``PARETO_OTHERS`` of the other configs with a value of every objective (evenly chosen)."""
    if len(objectives) < 2:
        return []
    x, y = objectives[0], objectives[1]
    out = []
    mine = [r for r in results if (r.variant, r.shape) == (variant, shape)]
    found = fronts(mine, objectives)
    for (_, _, gpu, phase), front in found.items():
        names = param_names(param_order, variant, shape, front)
        on = {config_id(r.params) for r in front}
        rest = [r for r in mine if config_id(r.params) not in on and (r.gpu_name if gpu else None) == gpu
                and all(_value(r, o.metric) is not None for o in objectives)]
        step = max(1, math.ceil(len(rest) / PARETO_OTHERS))
        shown = rest[::step]
        out.append({
            "title": " · ".join(filter(None, [gpu, f"phase {phase}" if phase else None])),
            "axes": [{"metric": o.metric, "direction": o.direction} for o in (x, y)],
            "objectives": [{"metric": o.metric, "direction": o.direction} for o in objectives],
            "front": {"x": [_value(r, x.metric) for r in front], "y": [_value(r, y.metric) for r in front],
                      "text": [" ".join(f"{n}={fmt_cell(r.params.get(n))}" for n in names) for r in front]},
            "others": {"x": [_value(r, x.metric) for r in shown], "y": [_value(r, y.metric) for r in shown]},
            "others_total": len(rest),
        })
    return out


def _value(r: Result, metric: str) -> float | None:
    return r.value(metric)


def history_data(points: Sequence[Point]) -> dict:
    """One shape × variant's timeline: a point per source revision (its label, best value,
    interval where confirmed, speed-up over the one before, and whether that is a
    regression)."""
    return {
        "labels": [p.label for p in points], "values": [_num(p.value) for p in points],
        "lo": [_num(p.interval.lo) if p.interval else None for p in points],
        "hi": [_num(p.interval.hi) if p.interval else None for p in points],
        "speedup": [_num(p.speedup) for p in points], "regression": [p.regression for p in points],
        "confirmed": [p.confirmed for p in points], "evaluated": [p.evaluated for p in points],
        "config": [" ".join(f"{k}={fmt_cell(v)}" for k, v in p.params.items()) for p in points],
    }
