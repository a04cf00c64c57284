"""Where a warm-started search learns from: recorded datasets and ksweep databases.

``load_prior(path, ...)`` reads either (recognised by content: an SQLite database, else a
Kernel Tuner cache or T4 results file) and returns the ``Prior`` (``warm/prior.py``)
of a search. A database gives one source per (variant, shape, GPU model) it holds,
chosen for the target: the target's own shape and variant when it has them (the same
kernel on another GPU, or before a change of its source), else the target's variant, else
everything. Values are the source database's own objective, to minimise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import DatasetError, KsweepError
from ..job import config_id
from ..replay.dataset import Dataset
from ..result import Result
from ..status import Status
from .prior import Prior, Source

SQLITE_MAGIC = b"SQLite format 3\x00"


def dataset_source(dataset: Dataset) -> Source:
    """Every recorded config of a dataset and its value (None where it failed)."""
    configs = tuple(dataset.config(i) for i in range(len(dataset)))
    values = tuple(None if np.isnan(v) else float(v) for v in dataset.values)
    return Source(label=dataset.name, configs=configs, values=values)


def dataset_prior(*datasets: Dataset) -> Prior:
    return Prior(tuple(dataset_source(d) for d in datasets))


def results_sources(results: Iterable[Result], metric: str, direction: str, label: str = "") -> list[Source]:
    """Stored results as sources, one per (variant, shape, GPU model); failures as None,
    pruned configs left out, a maximised metric negated. A result with no GPU (its build
    failed) belongs to every GPU model's source of its shape and variant."""
    ran: dict[tuple, dict[str | None, list]] = {}
    for r in results:
        if r.status is Status.PRUNED:
            continue
        value = r.value(metric)
        if value is not None and direction == "max":
            value = -value
        ran.setdefault((r.variant, r.shape), {}).setdefault(r.gpu_name, []).append((dict(r.params), value))
    out = []
    for (variant, shape), by_gpu in ran.items():
        gpuless = by_gpu.pop(None, [])
        for gpu, items in (by_gpu.items() if by_gpu else [(None, [])]):
            # in a fixed order (the store's is the order results finished in), so that the
            # prior, and the search it informs, is the same whatever the timing of a sweep
            items = sorted(items + gpuless, key=lambda cv: config_id(cv[0]))
            name = f"{label}{variant}/{shape}" + (f" on {gpu}" if gpu not in (None, "none") else "")  # "none": no GPU
            out.append(Source(label=name, configs=tuple(c for c, _ in items), values=tuple(v for _, v in items)))
    return out


def is_database(path: str | Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def database_prior(path: str | Path, variant: str | None = None, shape: str | None = None) -> Prior:
    """The sources of a ksweep database for a target (variant, shape): see the module's doc."""
    from ..store.sqlite import Store

    with Store(path, create=False) as store:
        objective = store.objective()
        results = [r for r in store.results(superseded=True) if r.status is not Status.PRUNED]
    metric, direction = objective.metric, objective.direction
    if not results:
        raise KsweepError(f"--warm-start {path}: the database holds no results to start from")
    if not any(r.value(metric) is not None for r in results):
        # refused, as an empty database is: the user asked for a warm start and would get a cold one
        raise KsweepError(f"--warm-start {path}: none of its {len(results)} results succeeded: "
                          f"it holds nothing to start from")
    chosen = [r for r in results if r.variant == variant and r.shape == shape]
    if not chosen:
        chosen = [r for r in results if r.variant == variant] or results
    return Prior(tuple(results_sources(chosen, metric, direction, label=f"{Path(path).name}:")))


def load_prior(path: str | Path, variant: str | None = None, shape: str | None = None,
               names: Sequence[str] | None = None) -> Prior:
    """The prior of a database or a recorded dataset; a one-line error for anything else,
    and, given the target's parameter ``names``, for a source that shares none of them
    (another kernel's: it could inform nothing)."""
    from ..replay.importers import load_dataset

    if not Path(path).exists():
        raise KsweepError(f"--warm-start {path}: no such file (give a ksweep database or a recorded dataset)")
    try:
        prior = database_prior(path, variant, shape) if is_database(path) else dataset_prior(load_dataset(path))
    except DatasetError as exc:
        raise KsweepError(f"--warm-start {exc}") from None
    if names is not None:
        theirs = list(dict.fromkeys(n for source in prior.sources for n in source.names))
        if theirs and not set(theirs) & set(names):
            raise KsweepError(f"--warm-start {path}: shares no parameter with the target (its: "
                              f"{', '.join(theirs[:8])}; the target's: {', '.join(list(names)[:8])}): "
                              "give results of the same kernel")
    return prior


def check_warm_start(paths: Sequence[str | Path], names: Iterable[str]) -> None:
    """Refuse, in one line and before anything is made, a --warm-start source that
    ``load_prior`` would refuse at the first shape (no such file, nothing that succeeded, no
    parameter shared with any of the target's ``names``)."""
    names = tuple(dict.fromkeys(names))
    for path in paths:
        load_prior(path, names=names)
