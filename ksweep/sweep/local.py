"""A sweep on this host, given its executor and run mode: the store, the build cache and
builder, the scratch folders, and the clean-up after it. Choosing the executor and the
mode for a spec is the wiring's (ksweep/app/wiring.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from ..build.builder import Builder, BuildRules
from ..build.cache import BuildCache
from ..errors import EnvironmentProblem, Interrupted, KsweepError, SpecError
from ..process import pid_alive, reap_session
from ..run.environment import missing_programs
from ..run.modes import Mode
from ..spec.model import Spec
from ..store.sqlite import Store
from ..workspace import ensure, workspace
from .driver import Summary, Sweep, SweepOptions

__all__ = ["build_rules", "cache_dir_of", "check_sources_exist", "default_db_path", "make_builder", "run_with", "scratch_dir",
           "workspace"]


def default_db_path(spec: Spec) -> Path:
    stem = spec.path.stem if spec.path else spec.name
    return workspace(spec) / f"{stem}.db"


def build_rules(spec: Spec) -> BuildRules:
    return BuildRules.of(spec)


def cache_dir_of(spec: Spec, cache_dir: str | Path | None = None) -> Path:
    """The build cache's folder: ``cache_dir`` when given, else ``.ksweep/cache`` beside the spec."""
    return Path(cache_dir) if cache_dir else workspace(spec) / "cache"


def make_builder(spec: Spec, cache_dir: Path | None = None) -> Builder:
    cache = BuildCache(cache_dir_of(spec, cache_dir))
    cache.clean_leftovers()  # scratch folders of builds killed mid-way
    return Builder(cache, build_rules(spec))


def scratch_dir(spec: Spec) -> Path:
    """This process's folder for run folders: ``scratch/<pid>``; the folders of processes that
    are gone (killed before they could clean up) are removed on the way."""
    root = workspace(spec) / "scratch"
    try:
        entries = list(root.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.isdigit() and not pid_alive(int(entry.name)):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith("run-"):  # the flat layout of earlier versions
            shutil.rmtree(entry, ignore_errors=True)
    return root / str(os.getpid())




def check_sources_exist(spec: Spec, variants: tuple[str, ...] | None = None) -> None:
    """Every source the chosen variants list exists (one line naming the first that does not)."""
    for v in spec.variant_list():
        if variants and v.name not in variants:
            continue
        listed = v.sources if v.sources is not None else spec.build.sources
        key = f"variants.{v.name}.sources" if v.sources is not None else "build.sources"
        for rel in listed:
            if not (spec.root / rel).exists():
                raise SpecError(f"source '{rel}' does not exist (looked for {spec.root / rel}): "
                                f"fix {key}, or run from where the sources are", path=spec.label, key=key)


def run_with(spec: Spec, executor_factory, mode: Mode | None = None, *, db: str | Path | None = None,
             options: SweepOptions = SweepOptions(), observer=None, executor=None,
             strategy_factory=None) -> tuple[Summary, Path]:
    """Run a sweep of ``spec`` into ``db``: on ``executor`` when given (the caller shuts it
    down), else on one ``executor_factory()`` makes, shut down and cleaned up after.
    ``strategy_factory(name, space, seed, max_evals)``: the strategy of each shape ×
    variant, when not the one ``options`` names."""
    db_path = Path(db) if db else default_db_path(spec)
    check_options(spec, options, strategy_factory is not None)  # before anything is created
    check_sources_exist(spec, options.variants)  # before anything is created beside the spec
    problem = missing_programs(spec)
    if problem:
        raise EnvironmentProblem(f"{spec.label}: {problem}")
    ensure(spec)
    made = not db_path.exists()
    store = Store(db_path)
    own_executor = executor is None
    summary = None
    refused = False
    try:
        if executor is None:
            executor = executor_factory()
        summary = Sweep(spec, store, executor, options, observer, strategy_factory=strategy_factory, mode=mode).run()
    except EnvironmentProblem:
        refused = made and not store.count()  # the host refused it before any result: nothing to keep
        raise
    finally:
        with finished_sweep(summary):
            if own_executor and executor is not None:
                executor.shutdown()
            store.close()
            if refused:  # no empty database (nor its CSV) is left behind
                for path in (db_path, *(db_path.with_name(db_path.name + end) for end in ("-wal", "-shm", ".lock"))):
                    path.unlink(missing_ok=True)
            if own_executor:
                reap_session()  # a daemon a run left behind with its output closed: nothing of ours runs now
                shutil.rmtree(scratch_dir(spec), ignore_errors=True)
    return summary, db_path


def check_options(spec: Spec, options: SweepOptions, own_strategy: bool = False, cli: bool = False) -> None:
    """Refuse, before the database is made, what the sweep could not honour: a shape or
    variant the spec does not have, a strategy ksweep does not know or cannot run here
    (unless the caller makes its own), a --warm-start source that informs nothing. ``cli``:
    the messages name ``ksweep run``'s options (``--shape``), else SweepOptions' fields."""
    from ..spec.names import did_you_mean
    from ..strategies import STRATEGIES, missing

    def said(what: str, name: str) -> str:
        return f"--{what} {name}" if cli else f"{what} {name!r}"

    for what, asked, names in (("shape", options.shapes, [s.name for s in spec.shape_list()]),
                               ("variant", options.variants, [v.name for v in spec.variant_list()])):
        for name in asked or ():
            if name not in names:
                close = did_you_mean(name, names)
                raise KsweepError(f"{said(what, name)}: the spec has no such {what}"
                                  + (f" (did you mean {close}?)" if close else f"; its {what}s: {', '.join(names)}"))
    if not own_strategy:
        if options.strategy not in STRATEGIES:
            close = did_you_mean(options.strategy, list(STRATEGIES))
            raise KsweepError(f"{said('strategy', options.strategy)}: no such strategy"
                              + (f" (did you mean {close}?)" if close else f"; choose one of {', '.join(STRATEGIES)}"))
        absent = missing(options.strategy)
        if absent is not None:
            raise absent
    if options.warm_start:
        from ..warm.sources import check_warm_start

        check_warm_start(options.warm_start, spec.param_names())


@contextlib.contextmanager
def finished_sweep(summary: Summary | None):
    """Ctrl-C in what follows a sweep (shutting down, cleaning up): Interrupted with what the
    sweep had evaluated, when it had ended or was itself interrupted (not a bare
    KeyboardInterrupt that counts 0)."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted):
            raise
        # a second Ctrl-C while the sweep's own Interrupted was on its way: that one's count
        first = exc.__context__ if isinstance(exc.__context__, Interrupted) else None
        if summary is None and first is not None:
            summary = first.summary
        if summary is not None:
            raise Interrupted(summary) from None
        raise
