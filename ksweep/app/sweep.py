"""``ksweep run``: sweep a spec with everything wired, write its CSV, read its best.

    import ksweep
    spec = ksweep.load_spec("sgemm.toml")
    summary, db = ksweep.run_sweep(spec, options=ksweep.SweepOptions(strategy="auto", max_evals=100))

A sweep takes its options as ``SweepOptions`` (its confirmation as ``Confirmation``), the
records this module's functions are called with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import KsweepError
from ..report.records import to_csv
from ..report.pareto import front_ids
from ..result import Result
from ..spec.checks import check_modes
from ..spec.model import Spec
from ..spec.objectives import with_objectives
from ..store import standings
from ..store.sqlite import Store
from ..sweep.options import Summary, SweepOptions
from ..sweep.local import check_options, finished_sweep, run_with
from ..verify.confirm import Confirmation
from .plan import check_defines_read
from .wiring import cache_folder, check_sweep_folders, database, make_dask_executor, make_executor, mode_for

__all__ = ["Confirmation", "SweepOptions", "SweepRun", "best_result", "check_options", "run_sweep", "tune",
           "with_overrides", "write_csv"]


def run_sweep(spec: Spec, *, db: str | Path | None = None, options: SweepOptions = SweepOptions(),
              gpus: list[int] | None = None, jobs: int | None = None, observer=None,
              executor=None, kernel_backend: str = "cuda", start_gap: float | None = None,
              cache: str | Path | None = None, strategy_factory=None) -> tuple[Summary, Path]:
    """Sweep a spec on this host (or on ``executor``, which the caller then shuts down):
    build, run, verify and store every config the strategy proposes; resumes from ``db``.
    ``cache``: the build cache's folder (else ``cache/`` beside ``db`` when it is given, else
    ``.ksweep/cache`` beside the spec)."""
    cache = cache_folder(db, cache)
    if executor is None:  # a cluster's workers keep their own folders
        check_sweep_folders(spec, db, cache)
    return run_with(spec, lambda: make_executor(spec, gpus, jobs, kernel_backend, start_gap, cache),
                    mode_for(spec, kernel_backend), db=db, options=options, observer=observer, executor=executor,
                    strategy_factory=strategy_factory)


@dataclass(frozen=True)
class SweepRun:
    """What ``tune`` did: the summary (None when interrupted), the database and its CSV."""

    summary: Summary | None
    db: Path
    csv: Path | None


def tune(spec: Spec, *, db: str | Path | None = None, options: SweepOptions = SweepOptions(),
          gpus: list[int] | None = None, jobs: int | None = None, cluster: str | None = None,
          fake_gpus: int | None = None, shared_cache: str | Path | None = None, start_gap: float | None = None,
          observer=None, cache: str | Path | None = None) -> SweepRun:
    """``ksweep run``'s workflow as a call: choose the executor (this host, or a Dask cluster
    with ``cluster``), run the sweep, and write every stored result to a CSV beside the
    database. Ctrl-C raises ``ksweep.errors.Interrupted`` (its ``summary`` says what was
    evaluated) after the executor is shut down; the CSV is written either way. A parameter whose
    -D name no source reads is refused first, in one line (spec/unread.py)."""
    if cluster is None and (fake_gpus or shared_cache):
        raise KsweepError("--fake-gpus and --shared-cache apply to a Dask cluster: add --cluster local")
    check_defines_read(spec)  # a knob no source reads: said before anything is built
    db_path = database(spec, db)
    cache = cache_folder(db, cache)
    executor = None
    interrupted = False
    summary = None
    try:
        if cluster is not None:
            # the cache beside the database is shared only by a local cluster's workers: a remote
            # one's cannot see this host's folders, and the binaries travel in its tasks
            local = shared_cache or (cache if cluster == "local" else None)
            executor = make_dask_executor(spec, cluster, gpus=gpus, fake_gpus=fake_gpus, jobs=jobs,
                                          shared_cache=local, start_gap=start_gap)
        summary, db_path = run_sweep(spec, db=db_path, options=options, gpus=gpus, jobs=jobs, observer=observer,
                                     executor=executor, start_gap=start_gap, cache=cache)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with finished_sweep(summary):
            if executor is not None:
                executor.shutdown(cancel=interrupted)
            csv = write_csv(db_path)
    return SweepRun(summary, db_path, csv)


def best_result(db: str | Path, shape: str | None = None, variant: str | None = None) -> Result | None:
    """The best result of one shape × variant of a database, as ``ksweep report`` and
    ``export`` show it: the confirmation's BEST when the confirmation ran, else the ranked
    best (never a result a later sweep superseded); None when nothing is valid. ``shape``
    and ``variant`` may be left out when the database has one of them."""
    with Store(db, create=False) as store:
        pairs = sorted({(r.variant, r.shape) for r in store.results()})
        chosen = [(v, s) for v, s in pairs if (shape is None or s == shape) and (variant is None or v == variant)]
        if len(chosen) != 1:
            names = ", ".join(f"{s}/{v}" for v, s in pairs) or "none"
            raise KsweepError(f"{db}: {'no' if not chosen else 'more than one'} shape/variant matches "
                              f"(shape={shape!r}, variant={variant!r}); it holds {names}")
        v, s = chosen[0]
        return standings.best(store, v, s)


def write_csv(db: Path) -> Path | None:
    """Every result of a database as CSV beside it (``.csv``); None when there is no database
    (nothing, or a folder: the sweep's own error about it is the one to say)."""
    if not db.is_file():
        return None
    with Store(db, create=False) as store:
        found = standings.read(store)
        objectives = store.objectives()
    path = db.with_suffix(".csv")
    path.write_text(to_csv(found.results, found.confirmations, front_ids(found.results, objectives)))
    return path


def with_overrides(spec: Spec, *, persistent: bool | None = None, objectives=None) -> Spec:
    """The spec with what ``ksweep run``'s command line overrides: ``persistent`` (``[run]
    persistent``, checked against the spec's mode) and ``objectives`` (``[sweep] objectives``,
    said as ``--objectives``); None leaves the spec's own."""
    if persistent is not None:
        spec = replace(spec, run=replace(spec.run, persistent=persistent))
        check_modes(spec)  # e.g. --persistent on a [kernel] spec
    if objectives is not None:
        spec = with_objectives(spec, objectives, key="--objectives")
    return spec
