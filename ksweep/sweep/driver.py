"""The sweep loop: strategy → build → run → verify → store, for every shape × variant.

Builds run ahead of runs through a bounded window fed by the strategy, so the GPU does
not wait on the compiler. Each result is committed to the store as it finishes.

Determinism and resume. The strategy sees one fixed sequence of events whatever the
timing: results are *told* in the order the configs were *asked*, one at a time, and
after each tell the strategy is asked until ``window`` configs are asked but not told
(the window is fixed for a shape × variant and kept in the store). A seeded search
therefore proposes the same configs in every run, interrupted or not. A config already
in the store with the same result key (and unchanged dependencies, and a result from
the same GPU model) is not built or run again: when the strategy asks for it, its
stored result is told. ``--max-evals N`` means N evaluated configs of that shape ×
variant in the store, so re-running a finished sweep evaluates nothing and raising N
continues where it stopped.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from .. import physics
from ..confirm import Confirmation
from ..build import deps as depfiles
from ..build.builder import BuildResult
from ..build.revision import source_revision
from ..errors import EnvironmentProblem, Interrupted, KsweepError, SpecError, StoreError, SystematicFailure
from ..job import Job, config_id
from ..observer import METHODS, NullObserver, Observer, lacking, warm_started
from ..result import Result
from ..run.base import Executor
from ..run.gpus import Gpu
from ..run.environment import build_problem, missing_programs, run_problem
from ..run.modes import Mode, program_mode
from ..run.program import RunOutcome
from ..space.space import Space
from ..spec.model import Spec
from ..status import Status, Stopped
from ..store.sqlite import Store
from ..strategies.base import Budget, space_size
from ..verify import judge, unprinted, unverified
from .confirmation import ConfirmationPhase
from .systematic import SameErrorGuard
from .waiting import WAIT_STEP
from .jobs import JobFactory

PRUNED_RECORD_LIMIT = 20_000  # raw configs up to which every pruned config is stored with its reason
RUN_QUEUE_PER_SLOT = 2  # runs handed to the executor per GPU slot: the one running and the next
RERUN = ("failed", "all")


@dataclass
class Summary:
    """Counts and times of one `ksweep run`."""

    counts: dict[str, int] = field(default_factory=dict)
    evaluated: int = 0
    resumed: int = 0
    wall_seconds: float = 0.0
    build_cpu_seconds: float = 0.0
    gpu_seconds: float = 0.0
    gpu_slots: int = 1
    has_gpu: bool = True  # False: runs went to no GPU (a CPU sweep): no GPU figures to report
    ran_on: set = field(default_factory=set)  # GPU models the runs went to, when not known before (Dask)
    interrupted: bool = False
    failed: bool = False  # stopped by an error (a bad database, a host problem): nothing to report
    best: dict[tuple[str, str, str | None], Result] = field(default_factory=dict)
    sm_clocks: list = field(default_factory=list)  # the median SM clock of each run (NVML), MHz
    throttled: int = 0  # runs measured while throttled (each measured a second time)
    confirm_runs: int = 0  # confirmation runs (not counted by --max-evals)
    confirm_seconds: float = 0.0  # wall time of the confirmation phases
    # several objectives: the searches (not grid, not random) that only the first one guided
    searched_by: dict[str, str] = field(default_factory=dict)  # strategy -> the objective's metric

    def note_gpu_state(self, state: Mapping) -> None:
        if state.get("sm_clock_mhz"):
            self.sm_clocks.append(state["sm_clock_mhz"])
        self.throttled += bool(state.get("throttled"))

    @property
    def clocks(self) -> str:
        """'SM clock 1980 MHz median (1755-1980), 2 runs throttled', or '' without NVML data."""
        if not self.sm_clocks:
            return ""
        c = sorted(self.sm_clocks)
        text = f"SM clock {c[len(c) // 2]} MHz median ({c[0]}-{c[-1]})"
        return text + (f", {self.throttled} runs throttled" if self.throttled else ", never throttled")

    @property
    def gpu_idle_share(self) -> float:
        capacity = self.wall_seconds * self.gpu_slots
        return max(0.0, 1.0 - self.gpu_seconds / capacity) if capacity > 0 else 0.0

    @property
    def configs_per_minute(self) -> float:
        return 60.0 * self.evaluated / self.wall_seconds if self.wall_seconds > 0 else 0.0


# the largest seed every strategy takes (optuna's samplers, and so bayes, take 32 bits)
SEED_MAX = 2**32 - 1


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep searches, what it resumes and what it confirms. The defaults are ``ksweep
    run``'s: the CLI sets only what the user typed, so ``ksweep.run_sweep(spec)`` runs the
    sweep ``ksweep run spec`` runs (``auto``: the whole space when no budget bounds it, else
    the surrogate search; the 5 leaders within 5% and the default confirmed in 3 rounds)."""

    strategy: str = "auto"
    seed: int = 0
    max_evals: int | None = None
    time_limit: float | None = None
    patience: int | None = None
    shapes: tuple[str, ...] | None = None
    variants: tuple[str, ...] | None = None
    lookahead: int | None = None  # configs asked ahead of the results (default: 2 × build jobs + GPU slots)
    record_pruned: bool = True
    rerun: str | None = None  # "failed": evaluate stored failures again; "all": ignore stored results
    # --rerun all: the results it measures again are superseded until then (readers see its new
    # ones only); False for a caller that measures a few configs again and leaves the others (check)
    rerun_supersedes: bool = True
    gpu_check: bool = True  # refuse, before building, a CUDA program sweep on a host without a GPU
    # re-measure the leaders and the default after each shape × variant (ksweep/confirm.py); None: no
    confirm: Confirmation | None = Confirmation()
    # warm start (docs/strategies.md#warm-start): databases or recorded datasets to start each
    # search from, and whether each shape starts from the shapes this run swept before it
    warm_start: tuple[str, ...] = ()
    warm_between_shapes: bool = True

    def __post_init__(self):
        if self.rerun is not None and self.rerun not in RERUN:
            raise KsweepError(f"--rerun {self.rerun}: choose failed or all")
        _whole("max_evals", self.max_evals, 1)
        _whole("patience", self.patience, 1)
        _whole("seed", self.seed, 0, optional=False, most=SEED_MAX)
        if self.time_limit is not None and not (isinstance(self.time_limit, (int, float))
                                                and not isinstance(self.time_limit, bool)
                                                and 0 <= self.time_limit < float("inf")):
            raise KsweepError(f"time_limit {self.time_limit!r}: give a number of seconds, 0 or more")
        # one name or path given alone, not in a tuple: not read one character at a time
        for name in ("warm_start", "shapes", "variants"):
            value = getattr(self, name)
            if isinstance(value, (str, os.PathLike)):
                object.__setattr__(self, name, (os.fspath(value),))
            elif value is not None:
                object.__setattr__(self, name, tuple(os.fspath(v) for v in value))


def _whole(name: str, value, least: int, optional: bool = True, most: int | None = None) -> None:
    """An option that must be a whole number of at least ``least`` (and at most ``most``; or
    None when optional)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least or (most is not None and value > most):
        raise KsweepError(f"{name} {value!r}: give a whole number of at least {least}"
                          + (f" and at most {most}" if most is not None else ""))


@dataclass
class _Entry:
    """One asked config: its job, and its result once stored (or found in the store)."""

    job: Job
    result: Result | None = None
    resumed: bool = False
    remeasured: bool = False  # its first run was throttled and it was run again


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
        self.mode = mode or program_mode(spec)  # chosen by the wiring (ksweep/api.py)
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
        self._same_error = SameErrorGuard()
        self._swept: list[tuple[str, str]] = []  # (variant, shape) searched by this run, in order
        self.priors: dict[tuple[str, str], tuple[str, ...]] = {}  # (variant, shape) -> its sources' labels

    def _default_strategy(self, name: str, space, seed: int, max_evals: int | None, prior=None):
        o = self.options
        return _strategy(name, space, seed, max_evals, o.time_limit is None and o.patience is None, prior)

    def _prior(self, variant: str, shape: str):
        """What the search of (variant, shape) starts from: the --warm-start sources, and the
        results of the shapes of this variant that this run swept before (unless turned off)."""
        from ..replay.warm import load_prior, results_sources
        from ..strategies.prior import Prior

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
            self._check_store()
            self._preflight()
            self.store.set_meta("spec", str(self.spec.path) if self.spec.path else None)
            self.store.set_meta("spec_name", self.spec.name)
            self.store.set_objectives(self.spec.objective_list())
            self.store.revision = source_revision(self.spec.root, [self.spec.root / s for s in self._sources()])
            with _one_blas_thread():
                self._run_targets(start)
            self.flush_held()
        except KeyboardInterrupt:
            self.summary.interrupted = True
            try:
                self.flush_held()  # finished compile errors are results: Ctrl-C loses nothing finished
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
            for shape in self.spec.shape_list():
                if self.options.shapes and shape.name not in self.options.shapes:
                    continue
                # --max-evals and --patience count per shape × variant; --time-limit is for the run
                budget = Budget(self.options.max_evals, self.options.time_limit, self.options.patience,
                                started=start)
                if budget.exhausted():
                    return
                self._sweep_target(shape, variant, budget)

    def _check_store(self) -> None:
        check_store_spec(self.store, self.spec)

    def _preflight(self) -> None:
        """What would make every config fail, found before anything is built."""
        problem = missing_programs(self.spec) or self.mode.host_problem(self.spec, self._gpu_models,
                                                                        self.options.gpu_check)
        if problem:
            raise EnvironmentProblem(f"{self.spec.label}: {problem}")

    def _sweep_target(self, shape, variant, budget: Budget) -> None:
        space = Space.from_spec(self.spec, shape.name, variant.name)
        self.store.set_meta(f"params:{variant.name}:{shape.name}", list(space.names))
        factory = JobFactory(self.spec, shape, variant, space, self.mode)
        if self.options.record_pruned and space.raw_size <= PRUNED_RECORD_LIMIT:
            self._record_pruned(space, variant.name, shape.name)
        standing = self._standing(space, factory, variant.name, shape.name)
        stored = {cid: r for cid, r in standing.items() if self._reused(r, space)}
        rerun_marked: list[str] = []
        if self.options.rerun == "all" and self.options.rerun_supersedes:  # they stand for nothing until measured again: a reader
            # (report, plot) sees the sweep's new results only, not the old BEST beside them;
            # those the sweep does not reach stand again when it ends (_unmark_unreached)
            rerun_marked = [cid for cid in standing if cid not in stored]
            self.store.supersede(variant.name, shape.name, rerun_marked, [])
        try:
            target = self._search(shape, variant, budget, space, factory, standing, stored)
        except BaseException:  # Ctrl-C (in the reference's run too), a systematic failure: what stopped
            # the sweep is what it says; a mark that stays is a killed sweep's, judged by the next run
            with contextlib.suppress(Exception):
                self._unmark_unreached(variant.name, shape.name, rerun_marked)
            raise
        # before the confirmation, which ranks them with the configs measured again, and so
        # measures the old leaders again too
        back = self._unmark_unreached(variant.name, shape.name, rerun_marked)
        if target is None:
            return
        target.stored.update({cid: standing[cid] for cid in back})
        # patience ends a search as it should end: its leaders are confirmed; a time limit leaves no time
        if self.options.confirm is not None and not budget.exhausted_by_time():
            ConfirmationPhase(self, target, variant.name, shape.name).run()
        self._judge_later(variant.name, shape.name, target)

    def _search(self, shape, variant, budget: Budget, space, factory: JobFactory, standing: dict[str, Result],
                stored: dict[str, Result]) -> "_Target | None":
        """Search one shape × variant (its reference config first, when it has one) until its
        budget ends; None when its space is empty."""
        # --max-evals counts what the store holds already, but for the default config evaluated
        # by a confirmation (those runs are counted apart)
        budget.evals = sum(r.phase != "default" for r in stored.values())
        size = space_size(space)  # len() cannot count a space of more than 2**63 - 1 configs
        prior = None if self._custom_strategy or not size else self._prior(variant.name, shape.name)
        self._swept.append((variant.name, shape.name))
        if prior is not None:
            self.priors[(variant.name, shape.name)] = prior.labels
        # made first: a search the budget cannot bound is refused before anything is shown
        if not size:
            strategy = None
        elif prior is not None:
            strategy = self._make_strategy(self.options.strategy, space, self.options.seed, budget.max_evals,
                                           prior=prior)
        else:
            strategy = self._make_strategy(self.options.strategy, space, self.options.seed, budget.max_evals)
        searching = getattr(strategy, "chosen", None) or getattr(strategy, "name", None)
        if len(self.spec.objective_list()) > 1 and searching not in (None, "grid", "random"):
            self.summary.searched_by[searching] = self.spec.objective.metric  # the front is over what it found
        planned = size if budget.max_evals is None else min(size, budget.max_evals)
        self.observer.target_started(variant.name, shape.name, size, space.raw_size, planned)
        if prior is not None:
            warm_started(self.observer, variant.name, shape.name, prior.labels)
        for result in stored.values():  # they count, and show, whether or not the search asks for them again
            self.resumed(result)
        if size == 0:
            self._pending.pop((variant.name, shape.name), None)
            return None
        window = self._window(variant.name, shape.name)
        # the harness builds alongside the first configs; runs start once it is there
        harness = _Harness(factory.harness, self) if factory.harness else None
        target = _Target(self, space, factory, strategy, budget, stored, window, harness)
        target.standing = standing
        ref_id = self._reference_id(target)
        changed = self._reference_changed(target, ref_id, variant.name, shape.name)
        target.reference = self._reference(target)
        self._judge_again(target, ref_id, variant.name, shape.name, changed)
        target.loop()
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

    def _standing(self, space, factory: JobFactory, variant: str, shape: str) -> dict[str, Result]:
        """Stored results that stand for this experiment: same result key, same dependencies,
        a GPU model this run uses. Of the others, those measured on another source or spec are
        marked superseded (reports leave them out) and those that stand again lose the mark;
        another GPU model's are not judged (their compiler may be another host's)."""
        stale: list[str] = []
        current: list[str] = []
        later: list[tuple[str, str, bool]] = []  # (config, GPU model, stale): the models not known yet
        checked: dict[tuple, bool] = {}
        standing: dict[str, Result] = {}
        for old in self.store.evaluated(variant, shape):
            config = dict(old.params)
            cid = config_id(config)
            if old.gpu_name is not None and self._gpu_models is not None and old.gpu_name not in self._gpu_models:
                continue
            unknown = self._gpu_models is None and old.gpu_name not in (None, "none")
            if set(config) != set(space.names):  # another parameter set: not a config of this spec
                stale.append(cid)
                continue
            if config not in space and _within_lists(space, config):
                # a constraint prunes it now (added, or changed): the spec says it is invalid, and
                # a report must not rank it (_record_pruned stores it as PRUNED when it can)
                stale.append(cid)
                continue
            try:  # a config outside a narrowed space is judged too: its key does not depend on the space
                key = factory.make(config).cache_key  # (made first: a mode may write a file the build reads)
            except KsweepError:
                continue
            deps = tuple(map(tuple, old.deps))
            if deps not in checked:
                checked[deps] = depfiles.unchanged(deps)
            outdated = old.cache_key != key or not checked[deps]
            if unknown:  # a Dask cluster's models are known once it has run: judged then
                later.append((cid, old.gpu_name, outdated))
            elif outdated:
                stale.append(cid)
            else:
                current.append(cid)
            if outdated:
                continue
            standing[cid] = old  # of this experiment: judged again with it, asked for or not
        self.store.supersede(variant, shape, stale, current)
        self._pending[(variant, shape)] = later
        return standing

    def _reused(self, result: Result, space) -> bool:
        """Whether a standing result stands in for its config's evaluation in this sweep: a
        config of the space, not asked to be rerun."""
        return dict(result.params) in space and self.options.rerun != "all" and (
            self.options.rerun != "failed" or result.status is Status.OK)

    def _unmark_unreached(self, variant: str, shape: str, marked: list[str]) -> list[str]:
        """A --rerun all that ended before it measured every config again (--max-evals,
        --time-limit, --patience, Ctrl-C, a narrowed space): the configs it did not reach keep
        their stored results, of this experiment as they are, as a plain run would resume them
        (hidden, they left ``export`` and ``check`` a subset to rank). Those it measured lost
        the mark when stored; only a sweep killed outright leaves the others marked, until
        the next run judges them again (_standing)."""
        if not marked:
            return []
        still = {cid for _, _, cid in self.store.superseded(variant, shape)}
        back = [cid for cid in marked if cid in still]
        self.store.supersede(variant, shape, [], back)
        return back

    def _judge_later(self, variant: str, shape: str, target: "_Target") -> None:
        """The results of GPU models an executor did not name before the sweep (a Dask
        cluster's): judged now, for the models this target's runs went to."""
        later = self._pending.pop((variant, shape), [])
        ran = [e.result for e in target.order if e.result is not None]
        seen, again = {r.gpu_name for r in ran}, {config_id(r.params) for r in ran}
        # another model's results are not judged (those a --rerun all marked stood again when its
        # search ended: _unmark_unreached)
        mine = [(cid, stale) for cid, gpu, stale in later if gpu in seen and cid not in again]
        if mine:
            self.store.supersede(variant, shape, [c for c, s in mine if s], [c for c, s in mine if not s])

    # -- one result ---------------------------------------------------------------------
    def finish(self, job: Job, build: BuildResult, outcome: RunOutcome | None,
               reference: Mapping[str, float] | None = None, harness_deps: tuple = (), observe: bool = True) -> Result:
        """Judge a finished build (and run), store it, and return the stored result. A failure
        that every config would share (environment.py) stops the sweep and is not stored."""
        problem = build_problem(build, job) if outcome is None else run_problem(outcome)
        if problem:
            raise EnvironmentProblem(f"{self.spec.label}: {problem}")
        status, message, metrics, verified = build.status, build.message, {}, False
        gpu: Gpu | None = None
        if outcome is not None:
            self.summary.gpu_seconds += outcome.seconds
            metrics, gpu = physics.with_efficiency(outcome.metrics, job.work), outcome.gpu
            if self._gpu_models is None and gpu is not None:  # a Dask cluster's: known as its runs end
                self.summary.ran_on.add(gpu.name)
            status, message, verified = self.judged(job, outcome, metrics, reference)
        result = Result(
            variant=job.variant, shape=job.shape, params=dict(job.params), derived=dict(job.derived),
            status=status, message=message, verified=verified, metrics=metrics, **build.report.result_fields(),
            build_argv=job.build_argv, cache_key=job.cache_key, cached=build.cached, phase=job.phase,
            gpu_index=gpu.index if gpu else None, gpu_name=gpu.name if gpu else None,
            gpu_uuid=gpu.uuid if gpu else None, driver=gpu.driver if gpu else None,
            build_seconds=build.seconds, run_seconds=outcome.seconds if outcome else None,
            started=outcome.started if outcome else None, finished=time.time(), deps=tuple(dict.fromkeys((*build.deps, *harness_deps, *job.inputs))),
            gpu_state=dict(outcome.gpu_state) if outcome is not None else {},
        )
        if outcome is not None and outcome.gpu_state:
            self.summary.note_gpu_state(outcome.gpu_state)
        if not job.is_harness:
            verdict = self._same_error.see(build.status is not Status.COMPILE_ERROR, message, result,
                                           job.params.values())
            if verdict == "stop":
                raise SystematicFailure(
                    f"{self.spec.label}: the first {len(self._same_error.held)} configs all failed to compile with "
                    f"the same error, so every config would: {message[:600]} — fix the source or the build "
                    "command (a parameter whose -D macro rewrites an identifier of the program? give it "
                    "define = \"KS_NAME\" or [sweep] define_prefix; `ksweep plan` warns of such names)")
            if verdict == "hold":
                return result
            for held in self._same_error.release():
                self._store(held)
        if observe:
            self._store(result)
        else:
            self.store.put(result)
        return result

    def judged(self, job: Job, outcome: RunOutcome, metrics: Mapping[str, float],
                reference: Mapping[str, float] | None):
        """(status, message, verified) of a finished run: its own status, or for a run that ended
        OK, what verify.judge says of its ``metrics`` (every objective measured, the check, the
        physics gate)."""
        if outcome.status is not Status.OK:
            return outcome.status, outcome.message, False
        return judge(metrics, [o.metric for o in self.spec.objective_list()], self.spec.check, reference,
                     job.is_reference, outcome.outputs_checked, self._impossible(job, metrics, outcome.gpu))

    def _impossible(self, job: Job, metrics: Mapping[str, float], gpu: Gpu | None) -> str | None:
        """Why the run's time is below the physics floor of its GPU, or None."""
        p = self.spec.physics
        if p is None or job.work is None:
            return None
        value = metrics.get(p.time)
        if not isinstance(value, (int, float)):
            return None
        peaks = physics.gpu_peaks(gpu.name if gpu else None, p.peak_tflops, p.bandwidth_gbs, p.dtype)
        return physics.check(float(value), p.unit, physics.floor(job.work, p.dtype, peaks), p.margin)

    def _store(self, result: Result) -> None:
        self.store.put(result)
        self.summary.evaluated += 1
        self._observe(result, resumed=False)

    def flush_held(self) -> None:
        """Store the compile errors kept back by the same-error guard (the sweep ends)."""
        for held in self._same_error.release():
            self._store(held)

    def resumed(self, result: Result) -> None:
        self.summary.resumed += 1
        self._observe(result, resumed=True)

    def _observe(self, result: Result, resumed: bool) -> None:
        self.summary.counts[result.status.value] = self.summary.counts.get(result.status.value, 0) + 1
        key = (result.variant, result.shape, result.gpu_name)  # GPU models are never ranked together
        best = self.summary.best.get(key)
        v = result.value(self.spec.objective.metric)
        if v is not None and (best is None or self.spec.objective.better(v, best.value(self.spec.objective.metric))):
            self.summary.best[key] = best = result
        self.observer.result(result, best, resumed)

    def tell(self, result: Result, strategy, budget: Budget, counted: bool) -> None:
        value = result.value(self.spec.objective.metric)
        if value is not None and self.spec.objective.direction == "max":
            value = -value
        strategy.tell(dict(result.params), value)
        budget.record(value, counted=counted)

    def _reference_id(self, target: "_Target") -> str | None:
        """The config id of the reference of checks by metrics (``[check] reference =
        "defaults"``), or None: a mode that compares outputs where they are made cannot have
        its results judged again from stored metrics."""
        if self.spec.check.reference != "defaults" or not self.mode.checks_metrics:
            return None
        reference = self.mode.reference_config(self.spec, {p.name: p.default for p in target.space.params})
        return config_id(reference) if reference is not None else None

    def _reference_changed(self, target: "_Target", ref_id: str | None, variant: str, shape: str) -> bool:
        """Whether the reference config is another one than the stored results were judged
        against (a parameter's default changed): then the new reference's own stored result
        is judged again first, as the reference (by the expected values and bounds alone)."""
        if ref_id is None:
            return False
        key = f"reference:{variant}:{shape}"
        changed = self.store.get_meta(key) not in (None, ref_id)
        if changed and ref_id in target.stored:
            self._judge_stored(target, ref_id, None, is_reference=True)
        return changed

    def _judge_again(self, target: "_Target", ref_id: str | None, variant: str, shape: str, changed: bool) -> None:
        """Judge the stored results again, from their stored metrics, against the reference's,
        when the reference config changed, or when they could not be checked (the reference
        had failed) and it now stands: the check is a pure function of the metrics, so no run
        is needed."""
        if ref_id is None:
            return
        for cid, old in list(target.standing.items()):
            old = target.stored.get(cid, old)
            if cid != ref_id and (changed or (target.reference is not None and unverified(old.status, old.message))):
                self._judge_stored(target, cid, target.reference, is_reference=False)
        self.store.set_meta(f"reference:{variant}:{shape}", ref_id)

    def _judge_stored(self, target: "_Target", cid: str, reference: Mapping[str, float] | None,
                      is_reference: bool) -> None:
        old = target.stored.get(cid) or target.standing[cid]
        if old.status not in (Status.OK, Status.CHECKSUM_MISMATCH):
            return
        job = target.factory.make(dict(old.params))
        gpu = Gpu(old.gpu_index, old.gpu_name or "none", uuid=old.gpu_uuid) if old.gpu_name else None
        status, message, verified = judge(old.metrics, [o.metric for o in self.spec.objective_list()],
                                          self.spec.check, reference, is_reference, False,
                                          self._impossible(job, old.metrics, gpu))
        if (status, message, verified) == (old.status, old.message, old.verified):
            return
        new = replace(old, status=status, message=message, verified=verified)
        self.store.set_verdict(old, status, message, verified)
        if cid not in target.stored:
            return  # not counted: a result outside the space (a list narrowed), or run again (--rerun)
        target.stored[cid] = new
        counts = self.summary.counts  # it was counted as resumed with its old status
        counts[old.status.value] -= 1
        counts[status.value] = counts.get(status.value, 0) + 1

    # -- reference and pruned configs -------------------------------------------------
    def _reference(self, target: "_Target"):
        """Evaluate (or resume) the reference config before any other, and tell it first."""
        space, factory = target.space, target.factory
        defaults = self.mode.reference_config(self.spec, {p.name: p.default for p in space.params})
        if defaults is None:
            return None
        verdict = space.explain(defaults) if set(defaults) == set(space.names) else None
        if verdict is None or not verdict.ok:
            why = f"{verdict.constraint}: {verdict.reason}" if verdict else "it does not name every parameter"
            key = self.mode.reference_key
            raise SpecError(f"the reference config is not valid for shape {factory.shape.name}, variant "
                            f"{factory.variant.name}: {why}", path=self.spec.label, key=key)
        job = factory.make(defaults, phase="reference", is_reference=True)
        result = target.evaluate_now(job)
        missing = unprinted(result.metrics, self.spec.check)
        if result.status is Status.CHECKSUM_MISMATCH and missing:
            # every config would be compared on a key nobody prints: stop before the sweep spends its budget
            printed = ", ".join(result.metrics) or "nothing"
            raise SpecError(f"the defaults config printed no {', '.join(missing)} to compare the others with (it "
                            f"printed {printed}): name printed metrics in [check] keys", path=self.spec.label,
                            key="check.keys")
        return dict(result.metrics) if result.status is Status.OK else None

    def _record_pruned(self, space, variant: str, shape: str) -> None:
        """Store every pruned config with its reason (a result measured before a constraint
        pruned it is replaced: the history keeps it), and supersede the PRUNED rows of configs
        that are valid now (a constraint removed or changed)."""
        names = space.names
        rows = []
        valid_again = [config_id(r.params) for r in self.store.results(variant, shape, superseded=True)
                       if r.status is Status.PRUNED and set(r.params) == set(names) and dict(r.params) in space]
        still_pruned = []  # stored PRUNED rows that stand (again, if a constraint came back)
        for values in itertools.product(*(p.values for p in space.params)):
            config = dict(zip(names, values))
            if config in space:
                continue
            stored = self.store.get(variant, shape, config_id(config))
            if stored is not None and stored.status is Status.PRUNED:
                still_pruned.append(config_id(config))
                continue
            try:
                verdict = space.explain(config)
                derived = space.derive_known(config)
            except SpecError as exc:
                verdict, derived = None, {}
                message = str(exc)
            else:
                message = f"{verdict.constraint}: {verdict.reason}"
            rows.append(Result(variant=variant, shape=shape, params=config, derived=derived,
                               status=Status.PRUNED, message=message, finished=time.time()))
        if rows:
            self.store.put_many(rows)
        self.store.supersede(variant, shape, valid_again, still_pruned)
        size = space_size(space)
        if rows or space.raw_size > size:
            self.summary.counts["PRUNED"] = self.summary.counts.get("PRUNED", 0) + (space.raw_size - size)


class _Target:
    """The pipeline of one shape × variant: asks, builds, runs, stores, and tells in order."""

    def __init__(self, sweep: Sweep, space, factory: JobFactory, strategy, budget: Budget,
                 stored: dict[str, Result], window: int, harness: "_Harness | None"):
        self.sweep, self.space, self.factory, self.strategy = sweep, space, factory, strategy
        self.budget, self.stored, self.window, self.harness = budget, stored, window, harness
        self.executor = sweep.executor
        self.standing: dict[str, Result] = {}  # the stored results of this experiment, reused or not (stored)
        self.reference: Mapping[str, float] | None = None
        self.order: list[_Entry] = []  # every asked config, in the order asked
        self.told = 0  # entries told to the strategy (a prefix of order)
        self.fresh = 0  # asked configs not found in the store (evaluated by this run)
        self.builds: dict[Future, _Entry] = {}
        self.ready: list[tuple[_Entry, BuildResult]] = []
        self.runs: dict[Future, tuple[_Entry, BuildResult]] = {}
        self.done_asking = False

    # -- asking and telling, in one fixed order --------------------------------------
    def _may_ask(self) -> bool:
        if self.done_asking or len(self.order) - self.told >= self.window:
            return False
        b = self.budget
        if b.max_evals is not None and len(self.stored) + self.fresh >= b.max_evals:
            return False
        return not b.exhausted_by_time_or_patience()

    def _fill(self) -> None:
        while self._may_ask():
            configs = self.strategy.ask(1)
            if not configs:
                self.done_asking = self.strategy.exhausted
                return
            job = self.factory.make(configs[0], phase=_phase(self.strategy, configs[0]))
            self._submit(job)

    def _submit(self, job: Job) -> _Entry:
        entry = _Entry(job)
        self.order.append(entry)
        old = self.stored.get(job.config_id)
        if old is not None:  # shown and counted when the target started
            entry.result, entry.resumed = old, True
            return entry
        self.fresh += 1
        if self.harness is not None:
            self.harness.start()
        self.sweep.observer.build_started(job)
        self.builds[self.executor.submit_build(job)] = entry
        return entry

    def _advance(self) -> None:
        """Tell every result whose turn has come, asking for more after each one (asked configs
        found in the store have their result at once, and are told in their turn too)."""
        while True:
            while self.told < len(self.order) and self.order[self.told].result is not None:
                entry = self.order[self.told]
                self.told += 1
                self.sweep.tell(entry.result, self.strategy, self.budget, counted=not entry.resumed)
                self._fill()
            asked = len(self.order)
            self._fill()
            if len(self.order) == asked:
                return

    # -- the pipeline --------------------------------------------------------------------
    def evaluate_now(self, job: Job) -> Result:
        """Build and run one job before any other (the reference), then tell it."""
        entry = self._submit(job)
        while entry.result is None:
            self._step()
        self._advance()
        return entry.result

    def loop(self) -> None:
        while True:
            self._advance()
            if not self.builds and not self.runs and not self.ready:
                if self.told < len(self.order):  # an asked config neither in flight nor finished
                    raise RuntimeError(f"ksweep bug: {self.order[self.told].job.label} was lost")
                return  # nothing in flight, nothing more to ask
            self._step()
            if self.budget.exhausted_by_time_or_patience():
                self._cancel_queued()
                if not self.builds and not self.runs:
                    return

    def _step(self) -> None:
        """Start what can start, wait a little for something to finish, and store it."""
        self._start_runs()
        waiting = [*self.builds, *self.runs]
        if self.harness is not None and self.harness.pending:
            waiting.append(self.harness.future)
        if not waiting:
            return
        try:
            done, _ = wait(waiting, timeout=WAIT_STEP, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            self._salvage()
            raise
        for fut in done:
            if fut in self.builds:
                self._built(self.builds.pop(fut), fut.result())
            elif fut in self.runs:
                entry, build = self.runs.pop(fut)
                self._ran(entry, build, fut.result())

    def _start_runs(self) -> None:
        # start runs on free GPU slots, and queue one more per slot: a slot that finishes a
        # run starts the next at once instead of waiting for this loop (and, on a cluster,
        # the next binary reaches its worker during the run before)
        harness = self.harness
        while self.ready and len(self.runs) < RUN_QUEUE_PER_SLOT * self.executor.run_slots and \
                (harness is None or harness.ready(cancel_on_failure=self.builds)):
            entry, build = self.ready.pop(0)
            self.runs[self.executor.submit_run(entry.job, build)] = (entry, build)

    def _built(self, entry: _Entry, build: BuildResult | Stopped) -> None:
        if isinstance(build, Stopped):
            raise KeyboardInterrupt  # Ctrl-C reached the build first
        self.sweep.summary.build_cpu_seconds += build.cpu_seconds
        if build.harness_failed and self.harness is not None:
            self.harness.failed(build, cancel=self.builds)
        if build.status is Status.OK:
            self.ready.append((entry, build))
        else:
            entry.result = self.sweep.finish(entry.job, build, None)

    def _ran(self, entry: _Entry, build: BuildResult, outcome: RunOutcome | Stopped) -> None:
        if isinstance(outcome, Stopped):
            raise KeyboardInterrupt
        if outcome.status is Status.OK and outcome.gpu_state.get("throttled") and not entry.remeasured:
            entry.remeasured = True  # measured while throttled: once more (kept, flagged, if again)
            self.sweep.summary.note_gpu_state(outcome.gpu_state)
            self.runs[self.executor.submit_run(entry.job, build)] = (entry, build)
            return
        harness_deps = self.harness.deps if self.harness is not None else ()
        entry.result = self.sweep.finish(entry.job, build, outcome,
                                         None if entry.job.is_reference else self.reference, harness_deps)

    def _salvage(self) -> None:
        """Ctrl-C: store what had already finished (runs, and builds that failed) before leaving."""
        for fut, (entry, build) in list(self.runs.items()):
            if fut.done() and not fut.cancelled():
                outcome = fut.result()
                if not isinstance(outcome, Stopped):
                    with contextlib.suppress(KsweepError):
                        self._ran(entry, build, outcome)
        for fut, entry in list(self.builds.items()):
            if fut.done() and not fut.cancelled():
                build = fut.result()
                if not isinstance(build, Stopped) and build.status is not Status.OK and not build.harness_failed:
                    with contextlib.suppress(KsweepError):
                        entry.result = self.sweep.finish(entry.job, build, None)

    def _cancel_queued(self) -> None:
        for fut in [f for f in self.runs if f.cancel()]:  # queued, not started: past the budget
            self.runs.pop(fut)
        for fut in [f for f in self.builds if f.cancel()]:
            self.builds.pop(fut)
        self.ready.clear()
        # what was asked but will not be evaluated is never told: it leaves the order
        in_flight = {id(e) for e in self.builds.values()} | {id(e) for e, _ in self.runs.values()}
        self.order = self.order[: self.told] + [e for e in self.order[self.told:]
                                                if e.result is not None or id(e) in in_flight]
        self.done_asking = True


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


class _Harness:
    """The build of a shape × variant's harness, started with the first config that needs
    building: no run starts before it is there, and a harness that does not build stops
    the sweep (every config would fail the same way)."""

    def __init__(self, job: Job, sweep: Sweep):
        self.job, self._sweep = job, sweep
        self.future: Future | None = None
        self._checked = False

    def start(self) -> None:
        if self.future is None:
            self.future = self._sweep.executor.submit_build(self.job)

    @property
    def deps(self) -> tuple:
        """The files the harness's build read (a result depends on them too)."""
        if self.future is None or not self.future.done() or self.future.cancelled():
            return ()
        return self.future.result().deps

    @property
    def pending(self) -> bool:
        return self.future is not None and not self.future.done()

    def ready(self, cancel_on_failure=()) -> bool:
        """Built and fine; raises when it failed, after cancelling the builds not yet started."""
        if self.future is None or not self.future.done():
            return False
        if not self._checked:
            try:
                self._check(self.future.result())
            except KsweepError:
                for fut in cancel_on_failure:
                    fut.cancel()
                raise
        return True

    def wait(self) -> None:
        self.start()
        while not self.future.done():  # in steps: Ctrl-C is handled between them
            wait([self.future], timeout=WAIT_STEP)
        self.ready()

    def failed(self, build: BuildResult, cancel=()) -> None:
        """A config's build found its harness broken (one it links): stop the sweep."""
        for fut in cancel:
            fut.cancel()
        self.wait()  # raises with the compiler's words
        raise KsweepError(f"{self._sweep.spec.label}: {build.message}")  # a build worker's own copy failed

    def _check(self, build: BuildResult | Stopped) -> None:
        self._checked = True
        if isinstance(build, Stopped):
            raise KeyboardInterrupt
        self._sweep.summary.build_cpu_seconds += build.cpu_seconds
        if build.status is not Status.OK:
            log = "\n".join(build.log.strip().splitlines()[-20:])
            raise KsweepError(f"{self._sweep.spec.label}: the harness ([build.harness]) did not build: "
                              f"{build.message or 'no message'}" + (f"\n{log}" if log else ""))


def _takes_prior(factory: Callable) -> bool:
    import inspect

    try:
        return "prior" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _phase(strategy, config) -> str | None:
    phase_of = getattr(strategy, "phase_of", None)
    return phase_of(config) if phase_of else None


def _strategy(name: str, space, seed: int, max_evals: int | None, unbounded: bool, prior=None):
    from ..strategies import make_strategy

    # auto: a budget that covers the space (no --max-evals, no --time-limit, no --patience
    # covers any space) means grid; a time limit or patience may end it first, and a grid cut
    # short evaluates the space's first configs: no hint then (a search by promise);
    # docs/strategies.md
    hint = (max_evals if max_evals is not None else space_size(space)) if unbounded else None
    return make_strategy(name, space, seed=seed, budget_hint=hint, prior=prior)


def _within_lists(space, config: Mapping) -> bool:
    """Whether each of ``config``'s values is among its parameter's values (else the space
    was narrowed, and the config is judged by its key, not by the constraints)."""
    return all(config.get(p.name) in p.values for p in space.params)

