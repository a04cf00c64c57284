"""The Pareto front of a multi-objective sweep (pure): the configs no other config beats on
every objective at once.

Config A dominates B when A is at least as good as B on every objective and better on
one; the front is the configs nothing dominates, per variant × shape × GPU model (as the
rankings: runs on different GPUs are never compared). Only configs that passed everything
with a finite value of every objective take part. Configs with equal values are on the
front together. The computation is moocore's ``is_nondominated`` (the O(n log n)
dimension sweep for two or three objectives).
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..job import config_id
from ..result import Result
from ..spec.model import Objective
from ..spec.objectives import ENERGY_METRICS
from ..status import Status
from ..store.ranking import finite_value
from .rank import group_results
from .table import fmt_cell, param_names

def nondominated(points: Sequence[Sequence[float]], maximise: Sequence[bool]) -> list[bool]:
    """For each point (one value per objective), whether no other point dominates it."""
    if not points:
        return []
    import moocore

    return [bool(x) for x in moocore.is_nondominated(points, maximise=list(maximise), keep_weakly=True)]


def fronts(results: Iterable[Result], objectives: Sequence[Objective]) -> dict[tuple, list[Result]]:
    """The front of each (variant, shape, GPU model, phase) group that has valid configs, best
    first by the first objective."""
    out: dict[tuple, list[Result]] = {}
    for group, rows in group_results(results).items():
        valid = [r for r in rows if all(finite_value(r, o.metric) is not None for o in objectives)]
        if not valid:
            continue
        keep = nondominated([[finite_value(r, o.metric) for o in objectives] for r in valid],
                            [o.direction == "max" for o in objectives])
        first = objectives[0]
        sign = 1.0 if first.direction == "min" else -1.0
        out[group] = sorted((r for r, k in zip(valid, keep) if k), key=lambda r: sign * finite_value(r, first.metric))
    return out


def front_ids(results: Iterable[Result], objectives: Sequence[Objective]) -> set[tuple[str, str, str]] | None:
    """(variant, shape, config id) of every config on a front (the exports' ``pareto`` column);
    None for a single objective (no front to mark)."""
    if len(objectives) < 2:
        return None
    return {(r.variant, r.shape, config_id(r.params)) for rows in fronts(results, objectives).values() for r in rows}


def describe(objectives: Sequence[Objective]) -> str:
    """'ms (min), energy_mj (min)'."""
    return ", ".join(f"{o.metric} ({o.direction})" for o in objectives)


def render_fronts(results: Sequence[Result], objectives: Sequence[Objective], console: Console,
                  param_order: Mapping[tuple[str, str], list[str]] | None = None) -> None:
    """One table per group: the front's configs, their parameters, each objective, and the
    energy observer's columns where the configs have them."""
    results = list(results)
    valid_counts = {g: sum(r.status is Status.OK for r in rows) for g, rows in group_results(results).items()}
    found = fronts(results, objectives)
    if not found:
        console.print(escape(f"Pareto front over {describe(objectives)}: no config has a value of every objective"),
                      soft_wrap=True)
        return
    for (variant, shape, gpu, phase), rows in found.items():
        names = param_names(param_order, variant, shape, rows)
        metrics = [o.metric for o in objectives]
        metrics += [m for m in ENERGY_METRICS if m not in metrics and any(m in r.metrics for r in rows)]
        title = (f"Pareto front over {describe(objectives)} · variant {variant} · shape {shape}"
                 + (f" · {gpu}" if gpu else "") + (f" · phase {phase}" if phase else "")
                 + f" — {len(rows)} of {valid_counts[(variant, shape, gpu, phase)]} ok configs")
        console.print(f"[bold]{escape(title)}[/bold]", soft_wrap=True)
        table = Table(show_edge=False, box=None, padding=(0, 1), header_style="bold")
        for h in [*names, *(m.upper() for m in metrics)]:
            table.add_column(escape(h), justify="right", no_wrap=True)
        for r in rows:
            table.add_row(*(escape(fmt_cell(r.params.get(n))) for n in names),
                          *(escape(fmt_cell(r.metrics.get(m))) for m in metrics))
        console.print(table)
        console.print()
