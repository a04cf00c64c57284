"""``ksweep plan``: what a sweep will do before anything is compiled: the configs of each
shape × variant (valid, pruned by which constraint), what the sweep will cost on this
machine, and the valid configs the database already holds as spilling."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..report.plan_view import spilled
from ..space.plan import Plan, make_plan
from ..errors import SpecError
from ..spec.model import Spec
from ..spec.unread import unread_defines
from ..store.sqlite import Store
from .estimate import Estimate, estimate, sample_builds
from .wiring import cache_folder, database


@dataclass(frozen=True)
class Planned:
    plan: Plan
    estimate: Estimate
    spilled: dict  # (variant, shape) -> valid configs the database holds as SPILLS (report/plan_view.spilled)


def plan(spec: Spec, *, show: int = 5, db: str | Path | None = None, samples: int | None = None,
         warm_start: Sequence[str] = (), jobs: int | None = None, cache: str | Path | None = None) -> Planned:
    """The plan of ``spec`` (``show`` valid configs of each shape × variant), its cost estimate
    from the times measured in ``db`` (else the spec's database) or ``warm_start``, or from
    ``samples`` random configs built now (through the build cache ``ksweep run`` with the same
    ``db`` and ``cache`` will use, so that it reuses them), for ``jobs`` build jobs."""
    check_defines_read(spec)
    counted = make_plan(spec, show=show)
    return Planned(counted, _estimate(spec, db, samples, warm_start, jobs, cache), _spilled(spec, db))


def check_defines_read(spec: Spec) -> None:
    """A parameter whose -D name no source the build reads reads is refused in one line, before
    anything is built (spec/unread.py): every value would build the same program."""
    problem = unread_defines(spec)
    if problem:
        raise SpecError(problem)


def _estimate(spec: Spec, db, samples, warm_start, jobs, cache) -> Estimate:
    from ..report.estimate import sample_cost

    cache = cache_folder(db, cache)
    if warm_start:
        from ..warm.sources import check_warm_start

        check_warm_start(warm_start, spec.param_names())  # as ksweep run will
    cost = sample_cost(sample_builds(spec, samples, cache=cache)) if samples else None
    return estimate(spec, db=database(spec, db), warm_start=tuple(warm_start or ()), cost=cost, jobs=jobs)


def _spilled(spec: Spec, db) -> dict:
    db = database(spec, db)
    if not db.exists():
        return {}
    with Store(db, create=False) as store:
        return spilled(spec, store.results())
