"""A sweep: every shape × variant, each as one sequence of phases.

    stand → reference → search → confirm → harden → judge

1. **stand** (``store/resume.py``): the stored results that stand for this experiment, the
   pruned configs recorded, ``--rerun`` marks set;
2. **reference** (``reference.py``): the config the checks compare with, evaluated or resumed
   first; stored results judged again when it changed;
3. **search** (``pipeline.py``): ask → build → run → tell until the budget ends;
4. **confirm** (``confirmation.py``): the configs a cut-short ``--rerun all`` did not
   reach stand again; the leaders and the default are measured again in interleaved
   rounds, completing a confirmation a stopped run owes;
5. **harden** (``hardening.py``): the leaders' runs compared bitwise, each leader run under
   compute-sanitizer's tools (and, where the mode has them, checked on further inputs)
   before BEST is named: a config found unsafe is never BEST;
6. **judge**: the results of GPU models known only after the runs are judged.

Determinism and resume. The strategy sees one fixed sequence of events whatever the
timing (``pipeline.py``), so a seeded search proposes the same configs in every run,
interrupted or not. A config already in the store with the same result key (and unchanged
dependencies, and a result from the same GPU model) is not built or run again: when the
strategy asks for it, its stored result is told. ``--max-evals N`` means N evaluated
configs of that shape × variant in the store, so re-running a finished sweep evaluates
nothing and raising N continues where it stopped.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import Callable

from .. import version
from ..errors import EnvironmentProblem, Interrupted, KsweepError, StoreError
from ..observer import METHODS, NullObserver, Observer, lacking, warm_dropped, warm_started
from ..result import Result
from ..run.base import Executor
from ..run.environment import missing_programs
from ..run.modes import Mode, program_mode
from ..space.space import Space
from ..spec.model import Spec
from ..store import resume
from ..store.sqlite import Store
from ..store.standings import top as top_configs
from ..strategies.base import Budget, space_size
from ..strategies.listed import CrossStrategy
from ..build.revision import source_revision
from ..job import config_id
from ..status import Status
from ..verify.checks import constant_checksum
from .confirmation import ConfirmationPhase
from .context import SweepContext
from .hardening import HardeningPhase
from .jobs import JobFactory
from .options import Summary, SweepOptions
from .pipeline import Harness, Target
from .record import Recorder
from .reference import ReferencePhase

PRUNED_RECORD_LIMIT = 20_000  # raw configs up to which every pruned config is stored with its reason


def check_store_spec(store: Store, spec: Spec) -> None:
    """A database holds one spec's results: refuse another spec's."""
    name = store.get_meta("spec_name")
    if name is not None and name != spec.name:
        raise StoreError(f"{store.path} holds the results of spec '{name}', not '{spec.name}': "
                         f"give this spec its own --db")


class Sweep:
    def __init__(self, spec: Spec, store: Store, executor: Executor, options: SweepOptions = SweepOptions(),
                 observer: Observer | None = None, strategy_factory: Callable | None = None,
                 mode: Mode | None = None):
        self.spec = spec
        self.mode = mode or program_mode(spec)  # chosen by the wiring (ksweep/app/wiring.py)
        self.store = store
        self.executor = executor
        self.options = options
        self.observer = observer or NullObserver()
        missing = lacking(self.observer)
        if missing:  # said now: not as an error of another method from the clean-up after a failure
            raise KsweepError(f"the observer {type(self.observer).__name__} has no {', '.join(missing)} method "
                              f"(ksweep.Observer: {', '.join(METHODS)})")
        models = executor_gpu_models(executor)
        self.summary = Summary(gpu_slots=executor.run_slots, has_gpu=models is None or models != {"none"})
        self._gpu_models = models
        self._pending: dict[tuple[str, str], list] = {}  # results whose GPU model is not known yet
        self._make_strategy = strategy_factory or self._default_strategy
        # a caller's factory gets the prior only when it takes one (a ``prior`` keyword)
        self._custom_strategy = strategy_factory is not None and not _takes_prior(strategy_factory)
        self.record = Recorder(spec, store, self.summary, self.observer, models)
        self.context = SweepContext(spec, self.mode, store, executor, options, self.observer, self.summary, self.record)
        self._swept: list[tuple[str, str]] = []  # (variant, shape) searched by this run, in order
        self.priors: dict[tuple[str, str], tuple[str, ...]] = {}  # (variant, shape) -> its sources' labels
        self.warm_dropped: dict[tuple[str, str], str] = {}  # (variant, shape) -> why its search went on cold

    def _default_strategy(self, name: str, space, seed: int, max_evals: int | None, prior=None):
        o = self.options
        return _strategy(name, space, seed, max_evals, o.time_limit is None and o.patience is None, prior)

    def _prior(self, variant: str, shape: str):
        """What the search of (variant, shape) starts from: the --warm-start sources, and the
        results of the shapes of this variant that this run swept before (unless turned off)."""
        from ..warm.sources import load_prior, results_sources
        from ..warm.prior import Prior

        sources = []
        # a source must share a parameter with some variant (a database's results of another
        # variant stand in for this one's when it has none): said at the first target, before any work
        names = self.spec.param_names()
        for path in self.options.warm_start:
            sources.extend(load_prior(path, variant, shape, names).sources)
        if self.options.warm_between_shapes:
            objective = self.spec.objective
            for v, done in self._swept:
                if v == variant and done != shape:
                    sources.extend(results_sources(self.store.evaluated(v, done), objective.metric,
                                                   objective.direction, label="this run: "))
        prior = Prior(tuple(sources))
        return prior if prior else None

    def _sources(self) -> list[str]:
        listed = list(self.spec.build.sources)
        for v in self.spec.variant_list():
            listed += [s for s in v.sources or () if s not in listed]
        return listed

    # -- top level ---------------------------------------------------------------------
    def run(self) -> Summary:
        start = time.monotonic()
        self.store.lock()
        try:
            self.store.check_integrity()  # never resumed on a damaged file
            self._check_store()
            self._preflight()
            self.store.set_meta("spec", str(self.spec.path) if self.spec.path else None)
            self.store.set_meta("spec_name", self.spec.name)
            self.store.set_meta("spec_text", _spec_text(self.spec))  # the spec as written, which reports show
            self.store.set_meta("ksweep_version", version())
            self.store.set_objectives(self.spec.objective_list())
            # a config whose outputs differ from run to run may not be BEST: every reader asks the store
            self.store.set_meta("deterministic", self.options.deterministic or self.spec.harden.deterministic)
            self.store.revision = source_revision(self.spec.root, [self.spec.root / s for s in self._sources()])
            with _one_blas_thread():
                self._run_targets(start)
            self.record.flush_held()
        except KeyboardInterrupt:
            self.summary.interrupted = True
            try:
                self.record.flush_held()  # finished compile errors are results: Ctrl-C loses nothing finished
                self.executor.shutdown(cancel=True)
            finally:  # a second Ctrl-C meanwhile (or the signal sent to the process group too) still
                # says what the sweep evaluated; what the cut clean-up left, the session's reaping stops
                raise Interrupted(self.summary) from None
        except BaseException:
            self.summary.failed = True
            raise
        finally:
            self.summary.wall_seconds = time.monotonic() - start
            if self.summary.ran_on:  # the runs went to no GPU (a CPU sweep on a cluster): no GPU figures
                self.summary.has_gpu = bool(self.summary.ran_on - {"none"})
            self.store.unlock()
            self.observer.finished(self.summary)
        return self.summary

    def _run_targets(self, start: float) -> None:
        for variant in self.spec.variant_list():
            if self.options.variants and variant.name not in self.options.variants:
                continue
            swept = []
            for shape in self.spec.shape_list():
                if self.options.shapes and shape.name not in self.options.shapes:
                    continue
                # --max-evals and --patience count per shape × variant; --time-limit is for the run
                budget = Budget(self.options.max_evals, self.options.time_limit, self.options.patience,
                                started=start)
                if budget.exhausted():
                    return
                self._sweep_target(shape, variant, budget)
                swept.append(shape)
            if self.options.cross and len(swept) > 1 and not self._cross(variant, swept, start):
                return
            self._audit_checksum(variant)

    def _cross(self, variant, shapes: list, start: float) -> bool:
        """``--cross K``: each shape's K best measured at every other shape of the variant,
        its leaders then confirmed again (they may be among them): what ``export --robust``
        weighs one config on several shapes by, and a config one size found tried at the
        others. The configs are chosen once and kept in the store until the pass ends, so
        that a pass interrupted and resumed measures what an uninterrupted one does. This
        run's own results stand in it whatever ``--rerun`` says (the search measured them
        again already). False when the time limit ended it."""
        key = f"cross:{variant.name}"
        names = [s.name for s in shapes]
        kept = self.store.get_meta(key)
        if isinstance(kept, dict) and kept.get("k") == self.options.cross and kept.get("shapes") == names:
            tops = kept["tops"]
        else:
            tops = {name: top_configs(self.store, variant.name, name, self.options.cross, self._gpu_models)
                    for name in names}
            self.store.set_meta(key, {"k": self.options.cross, "shapes": names, "tops": tops})
        own = replace(self.options, rerun=None)
        saved = self.options, self.context
        self.options, self.context = own, replace(self.context, options=own)
        try:
            for shape in shapes:
                wanted = {config_id(c): c for name, configs in tops.items() if name != shape.name for c in configs}
                budget = Budget(None, own.time_limit, None, started=start)  # the listed configs bound it
                if budget.exhausted():
                    return False
                self._sweep_target(shape, variant, budget, list(wanted.values()))
        finally:
            self.options, self.context = saved
        self.store.delete_meta(key)
        return True

    def _audit_checksum(self, variant) -> None:
        """Say so when the default config's checksum is the same on every shape whose inputs
        differ (a mode that checks metrics: the checksum is the check)."""
        if not self.mode.checks_metrics:
            return
        by_shape, inputs = {}, set()
        for shape in self.spec.shape_list():
            given = (tuple(sorted(map(str, shape.defines.items()))), tuple(sorted(map(str, shape.constants.items()))))
            defaults = {p.name: p.default for p in self.spec.effective_params(shape, variant)}
            stored = self.store.get(variant.name, shape.name, config_id(defaults))
            if stored is not None and stored.status is Status.OK and given not in inputs:
                inputs.add(given)
                by_shape[shape.name] = stored.metrics
        blind = constant_checksum(by_shape)
        if blind:
            self.record.note(f"{self.spec.label}: {blind}")

    def _check_store(self) -> None:
        check_store_spec(self.store, self.spec)

    def _preflight(self) -> None:
        """What would make every config fail, found before anything is built."""
        problem = missing_programs(self.spec) or self.mode.host_problem(self.spec, self._gpu_models,
                                                                        self.options.gpu_check)
        if problem:
            raise EnvironmentProblem(f"{self.spec.label}: {problem}")

    def _sweep_target(self, shape, variant, budget: Budget, listed: list[dict] | None = None) -> None:
        """One shape × variant, searched (``listed``: --cross's configs of the other shapes
        measured instead, ``_cross``), confirmed, hardened and judged."""
        began = time.monotonic()  # the hardening's budget is a share of this shape × variant's time
        space = Space.from_spec(self.spec, shape.name, variant.name)
        self.store.set_meta(f"params:{variant.name}:{shape.name}", list(space.names))
        self.store.set_shape_sizes(shape.name, shape.defines, shape.args)
        factory = JobFactory(self.spec, shape, variant, space, self.mode)
        if self.options.record_pruned and space.raw_size <= PRUNED_RECORD_LIMIT and listed is None:
            pruned = resume.record_pruned(self.store, space, variant.name, shape.name)
            if pruned:
                self.summary.counts["PRUNED"] = self.summary.counts.get("PRUNED", 0) + pruned
        stand = resume.stand(self.store, variant.name, shape.name, space, _key_of(factory), self._gpu_models)
        standing = stand.standing
        self._pending[(variant.name, shape.name)] = stand.later
        stored = {cid: r for cid, r in standing.items() if resume.reused(r, space, self.options.rerun)}
        rerun_marked: list[str] = []
        if self.options.rerun == "all" and self.options.rerun_supersedes:  # they stand for nothing until measured again: a reader
            # (report, plot) sees the sweep's new results only, not the old BEST beside them;
            # those the sweep does not reach stand again when it ends (resume.unmark_unreached)
            rerun_marked = [cid for cid in standing if cid not in stored]
            resume.mark_for_rerun(self.store, variant.name, shape.name, rerun_marked)
        try:
            target = self._search(shape, variant, budget, space, factory, standing, stored, listed)
        except BaseException:  # Ctrl-C (in the reference's run too), a systematic failure: what stopped
            # the sweep is what it says; a mark that stays is a killed sweep's, judged by the next run
            with contextlib.suppress(Exception):
                resume.unmark_unreached(self.store, variant.name, shape.name, rerun_marked)
            raise
        # before the confirmation, which ranks them with the configs measured again, and so
        # measures the old leaders again too
        back = resume.unmark_unreached(self.store, variant.name, shape.name, rerun_marked)
        if target is None:
            return
        target.stored.update({cid: standing[cid] for cid in back})
        # patience ends a search as it should end: its leaders are confirmed; a time limit leaves no time
        if self.options.confirm is not None and not budget.exhausted_by_time():
            ConfirmationPhase(self.context, target, variant.name, shape.name).run()
        if not budget.exhausted_by_time():
            HardeningPhase(self.context, target, variant.name, shape.name, spent=time.monotonic() - began).run()
        resume.judge_later(self.store, variant.name, shape.name, self._pending.pop((variant.name, shape.name), []),
                           [e.result for e in target.order if e.result is not None])

    def _search(self, shape, variant, budget: Budget, space, factory: JobFactory, standing: dict[str, Result],
                stored: dict[str, Result], listed: list[dict] | None = None) -> "Target | None":
        """Search one shape × variant (its reference config first, when it has one) until its
        budget ends, or measure the ``listed`` configs (--cross); None when its space is empty."""
        # --max-evals counts what the store holds already, but for the default config evaluated
        # by a confirmation (those runs are counted apart)
        budget.evals = sum(r.phase != "default" for r in stored.values())
        size = space_size(space)  # len() cannot count a space of more than 2**63 - 1 configs
        searched = listed is None  # --cross measures listed configs: no prior, not a shape swept for the next
        prior = None if self._custom_strategy or not size or not searched else self._prior(variant.name, shape.name)
        if searched:
            self._swept.append((variant.name, shape.name))
        if prior is not None:
            self.priors[(variant.name, shape.name)] = prior.labels
        # made first: a search the budget cannot bound is refused before anything is shown
        if not size:
            strategy = None
        elif not searched:
            strategy = CrossStrategy(space, listed)
        elif prior is not None:
            strategy = self._make_strategy(self.options.strategy, space, self.options.seed, budget.max_evals,
                                           prior=prior)
        else:
            strategy = self._make_strategy(self.options.strategy, space, self.options.seed, budget.max_evals)
        searching = strategy.label if strategy is not None else None
        if len(self.spec.objective_list()) > 1 and searching not in (None, "grid", "random") and searched:
            self.summary.searched_by[searching] = self.spec.objective.metric  # the front is over what it found
        if not searched:  # --cross: the listed configs valid here and not measured here yet
            planned = sum(1 for c in listed if c in space and config_id(c) not in stored)
        else:
            planned = size if budget.max_evals is None else min(size, budget.max_evals)
        self.observer.target_started(variant.name, shape.name, size, space.raw_size, planned)
        if prior is not None:
            warm_started(self.observer, variant.name, shape.name, prior.labels)
        if searched:  # they count, and show, whether or not the search asks for them again; --cross
            # comes after this run's own search of the shape, whose results it counted and showed then
            for result in stored.values():
                self.record.resumed(result)
        if size == 0:
            self._pending.pop((variant.name, shape.name), None)
            return None
        window = self._window(variant.name, shape.name)
        # the harness builds alongside the first configs; runs start once it is there
        harness = Harness(factory.harness, self.context) if factory.harness else None
        target = Target(self.context, space, factory, strategy, budget, stored, window, harness)
        target.standing = standing
        ReferencePhase(self.context, target, variant.name, shape.name).run()
        target.loop()
        dropped = getattr(strategy, "warm_dropped", None) if prior is not None else None
        if dropped:
            self.warm_dropped[(variant.name, shape.name)] = dropped
            warm_dropped(self.observer, variant.name, shape.name, dropped)
        return target

    def _window(self, variant: str, shape: str) -> int:
        """Configs asked ahead of the results: fixed per shape × variant (kept in the store), so
        that a resumed search asks exactly what the first run asked."""
        key = f"window:{variant}:{shape}"
        kept = self.store.get_meta(key)
        if self.options.lookahead:
            window = self.options.lookahead
        elif isinstance(kept, int) and kept > 0:
            window = kept
        else:
            window = 2 * self.executor.build_jobs + self.executor.run_slots
        self.store.set_meta(key, window)
        return window

def executor_gpu_models(executor: Executor) -> set[str] | None:
    """The GPU models an executor runs on (``{"none"}`` without GPUs), or None when unknown."""
    models = executor.gpu_models
    return set(models) if models is not None else None


@contextlib.contextmanager
def _one_blas_thread():
    """Keep numpy's BLAS to one thread in the sweep process. The strategies' matrices are
    small (a few hundred rows), and a threaded OpenBLAS deadlocks when another thread of
    this process forks while it computes: its at-fork handler shuts the BLAS thread pool
    down under the main thread's feet (the main thread then spins forever, deaf to Ctrl-C).
    Children are started without fork handlers too (process.py); this is the second lock
    on the same door. Limits are restored afterwards (the library may run inside a user's
    program)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


def _takes_prior(factory: Callable) -> bool:
    import inspect

    try:
        return "prior" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _strategy(name: str, space, seed: int, max_evals: int | None, unbounded: bool, prior=None):
    from ..strategies import make_strategy

    # auto: a budget that covers the space (no --max-evals, no --time-limit, no --patience
    # covers any space) means grid; a time limit or patience may end it first, and a grid cut
    # short evaluates the space's first configs: no hint then (a search by promise);
    # docs/strategies.md
    hint = (max_evals if max_evals is not None else space_size(space)) if unbounded else None
    return make_strategy(name, space, seed=seed, budget_hint=hint, prior=prior)


def _key_of(factory: JobFactory):
    """A config's result key now, None when its job cannot be made (made first: a mode may
    write a file the build reads)."""
    def key(config: dict) -> str | None:
        try:
            return factory.make(config).cache_key
        except KsweepError:
            return None
    return key


def _spec_text(spec: Spec) -> str | None:
    """The spec file's text as the sweep read it; None for a spec given as a call (no file)."""
    try:
        return spec.path.read_text(encoding="utf-8", errors="replace") if spec.path else None
    except OSError:
        return None
