"""What a sweep will cost, and the effort presets: ``ksweep plan`` (its estimate, the sample
builds of ``--estimate``) and ``ksweep run --effort``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..outputs import writable_folder
from ..run.gpus import detect_gpus, select_gpus
from ..spec.model import Spec
from ..status import Status
from ..store.sqlite import Store
from ..strategies.effort import EFFORTS, Effort, choose
from ..sweep.options import SweepOptions
from ..sweep.local import cache_dir_of, make_builder
from ..verify.confirm import Confirmation
from .wiring import cache_folder, database, mode_for

__all__ = ["EFFORTS", "Estimate", "cached_sample_builds", "estimate", "measured_cost", "preset", "sample_builds"]


@dataclass(frozen=True)
class Estimate:
    """Expected wall time of a spec's sweep on this machine: exhaustive, and per effort preset
    (the configs still to evaluate, and the confirmation's runs)."""

    cores: int
    gpus: int  # GPUs seen (0: none, the runs counted one at a time)
    sizes: tuple[int, ...]  # valid configs of each shape × variant
    cost: Any  # report.estimate.Cost, or None when nothing was measured
    warm: bool
    exhaustive_seconds: float | None
    presets: tuple[tuple[Any, float | None], ...]  # (strategies.effort.Effort, seconds)
    stored: tuple[int, ...] = ()  # results the database holds of each shape × variant (a sweep resumes them)

    @property
    def machine(self) -> str:
        """'16 cores, 2 GPUs' (what the figures are for)."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}" if self.gpus else "no GPU seen: one run at a time"
        return f"{self.cores} cores, {gpus}"

    @property
    def lower_bound(self) -> bool:
        """The figures count the builds alone (no run measured yet)."""
        return self.cost is not None and self.cost.lower_bound


def measured_cost(db: str | Path | None, warm_start: Sequence[str] = ()):
    """Build and run times in ``db`` (else in the --warm-start databases: the cost says so), or None."""
    from ..warm.sources import is_database
    from ..report.estimate import cost_of

    for path in [db, *warm_start]:
        if path is not None and Path(path).exists() and is_database(path):
            with Store(path, create=False) as store:
                # build times stand whatever the source
                cost = cost_of(store.results(superseded=True),
                               source="database" if path == db else f"--warm-start {Path(path).name}")
            if cost is not None:
                return cost
    return None


def _stored(db: str | Path | None, spec: Spec, groups: Sequence[tuple[str, str]]) -> tuple[int, ...]:
    """Current results (not PRUNED) of each (variant, shape) in ``db``: what a sweep resumes
    when its keys still match (another spec's database is refused, as the sweep refuses it)."""
    if db is None or not Path(db).exists():
        return tuple(0 for _ in groups)
    from ..warm.sources import is_database
    from ..sweep.driver import check_store_spec

    if not is_database(db):
        return tuple(0 for _ in groups)
    counts: dict[tuple[str, str], int] = {}
    with Store(db, create=False) as store:
        check_store_spec(store, spec)
        for r in store.results():
            if r.status is not Status.PRUNED:
                counts[(r.variant, r.shape)] = counts.get((r.variant, r.shape), 0) + 1
    return tuple(counts.get(g, 0) for g in groups)


def _sample_jobs(spec: Spec, count: int, seed: int):
    """The jobs of ``count`` random valid configs of the spec's first shape × variant that has
    any; the first k of them are the same whatever ``count`` (at least k)."""
    from ..space.space import Space
    from ..sweep.jobs import JobFactory

    spaces = ((shape, variant, Space.from_spec(spec, shape.name, variant.name))
              for variant in spec.variant_list() for shape in spec.shape_list())  # in the sweep's order
    found = next((s for s in spaces if s[2].size), None)
    if found is None:
        return []
    shape, variant, space = found
    factory = JobFactory(spec, shape, variant, space, mode_for(spec))
    rng = np.random.default_rng(seed)
    size = space.size
    picks: list[int] = []
    while len(picks) < min(count, size):  # distinct configs (a space may be too large for numpy's choice)
        i = int(rng.integers(size)) if size < 2**63 else int(rng.random() * size)
        if i not in picks:
            picks.append(i)
    return [factory.make(space[i]) for i in sorted(picks)]


def sample_builds(spec: Spec, count: int, seed: int = 0, cache: str | Path | None = None) -> list[float]:
    """Build ``count`` random valid configs of the spec's first shape × variant that has any
    (through the build cache, so the sweep reuses them) and return each one's build wall
    seconds (for a config the cache already held, what its build took when it was made)."""
    writable_folder(cache_dir_of(spec, cache),
                    why="plan --estimate keeps its sample builds in the build cache, for the sweep to reuse",
                    fix="give --cache (or --db) in a folder you can write")
    builder = make_builder(spec, cache and Path(cache))
    seconds = []
    for job in _sample_jobs(spec, count, seed):
        result = builder.build(job)
        took = getattr(result, "built_seconds", 0.0)  # none for a build that Ctrl-C stopped
        if took > 0:
            seconds.append(took)
    return seconds


def cached_sample_builds(spec: Spec, cache: str | Path | None = None, most: int = 64) -> list[float]:
    """The build seconds of ``plan --estimate``'s sample configs that the build cache holds
    (the same configs: the same seed), building nothing: ``run --effort`` estimates from them
    when its database has no build time yet."""
    if not cache_dir_of(spec, cache).is_dir():
        return []  # no cache yet: nothing to read (and nothing made here)
    builder = make_builder(spec, cache and Path(cache))
    seconds = []
    for job in _sample_jobs(spec, most, 0):
        meta = builder.cache.lookup(job.build_cache_key)
        if meta and meta.get("seconds", 0) > 0:
            seconds.append(float(meta["seconds"]))
    return seconds


def estimate(spec: Spec, *, db: str | Path | None = None, warm_start: Sequence[str] = (), cost=None,
             jobs: int | None = None, gpus: list[int] | None = None, shapes=None, variants=None,
             max_evals: int | None = None, confirm_runs: int | None = None, limited: bool = False,
             cached_samples: bool = False, cache: str | Path | None = None) -> Estimate:
    """The expected wall time of an exhaustive sweep and of each effort preset, on this
    machine (``jobs`` build jobs, the GPUs ``gpus`` selects), from ``cost`` or the times
    measured in ``db`` (or the --warm-start databases). The configs ``db`` already holds are
    not counted (a sweep resumes them); each shape × variant adds its confirmation's
    ``confirm_runs`` runs (at most the default --confirm's 5 leaders and the default, 3
    rounds). ``max_evals``: the user's budget, in place of the presets'; ``limited``: a time
    limit or patience may end the sweep (strategies.effort.choose); ``cached_samples``: with
    no ``cost`` and no build time measured, the ``plan --estimate`` sample builds the build
    cache ``cache`` holds (``cached_sample_builds``: nothing is built). With no run time
    measured the figures are the builds' alone (``Estimate.lower_bound``), and a preset does
    not choose a whole-space sweep on them."""
    from ..report.estimate import confirmation_seconds, sample_cost, wall_seconds, with_runs
    from ..space.plan import make_plan

    cores = jobs or spec.build.jobs or os.cpu_count() or 1
    n_gpus = len([g for g in select_gpus(detect_gpus(), gpus) if g.index is not None])  # 0: none seen
    plan = make_plan(spec)
    entries = [e for e in plan.entries
               if (not shapes or e.shape in shapes) and (not variants or e.variant in variants)]
    sizes = tuple(e.valid for e in entries)
    stored = _stored(db, spec, [(e.variant, e.shape) for e in entries])
    measured = measured_cost(db, warm_start)
    if cost is None and cached_samples and (measured is None or not measured.builds):
        seconds = cached_sample_builds(spec, cache)
        cost = sample_cost(seconds) if seconds else None
    cost = measured if cost is None else with_runs(cost, measured)
    warm = bool(warm_start)
    if confirm_runs is None:
        c = Confirmation()
        confirm_runs = (c.k + 1) * c.rounds

    def seconds(evals: list[int]) -> float:
        return sum(wall_seconds(max(0, n - done), cost, cores, n_gpus) + confirmation_seconds(confirm_runs, cost, n_gpus)
                   for n, done in zip(evals, stored))

    exhaustive = seconds(list(sizes)) if cost else None
    presets = []
    for name in EFFORTS:
        effort = choose(name, max(sizes, default=0), warm=warm, budget=max_evals, limited=limited,
                        exhaustive_seconds=None if cost is None or cost.lower_bound else exhaustive)
        if cost is None:
            presets.append((effort, None))
            continue
        presets.append((effort, seconds([s if effort.max_evals is None else min(s, effort.max_evals) for s in sizes])))
    return Estimate(cores, n_gpus, sizes, cost, warm, exhaustive, tuple(presets), stored)


def preset(spec: Spec, name: str, *, db: str | Path | None = None, cache: str | Path | None = None,
           warm_start: Sequence[str] = (), jobs: int | None = None, gpus: list[int] | None = None, shapes=None,
           variants=None, max_evals: int | None = None, limited: bool = False,
           confirm: Confirmation | None = SweepOptions.confirm) -> tuple[Effort, float | None, Estimate]:
    """``ksweep run --effort NAME``: the preset NAME for this spec on this machine, its
    expected seconds (None: nothing measured) and the estimate they come from. ``db`` and
    ``cache`` as the sweep will use them; with no build measured in the database (or a
    --warm-start one), ``plan --estimate``'s sample builds the build cache holds (nothing is
    built here); ``confirm``: the sweep's confirmation, whose runs are counted."""
    est = estimate(spec, db=database(spec, db), warm_start=warm_start, cached_samples=True,
                   cache=cache_folder(db, cache), jobs=jobs, gpus=gpus, shapes=shapes, variants=variants,
                   max_evals=max_evals, limited=limited,
                   confirm_runs=0 if confirm is None else (confirm.k + confirm.default) * confirm.rounds)
    chosen, seconds = dict((e.name, (e, t)) for e, t in est.presets)[name]
    return chosen, seconds, est
