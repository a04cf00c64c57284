"""The sweep loop: strategy → build → run → verify → store, for every shape × variant.

Builds run ahead of runs through a bounded queue fed by the strategy, so the GPU does
not wait on the compiler. Each result is committed to the store as it finishes; a
config already in the store with the same build key is not built or run again (it is
told to the strategy from the store), so running the same spec again resumes.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from ..build.builder import BuildResult
from ..errors import KsweepError, SpecError
from ..job import Job, config_id
from ..result import Result
from ..run.gpus import Gpu
from ..run.program import RunOutcome
from ..spec.model import Spec
from ..status import Status
from ..store.sqlite import Store
from ..strategies.base import Budget
from ..verify import verify
from .jobs import JobFactory

PRUNED_RECORD_LIMIT = 20_000  # raw configs up to which every pruned config is stored with its reason
RUN_QUEUE_PER_SLOT = 2  # runs handed to the executor per GPU slot: the one running and the next


class Observer(Protocol):
    def target_started(self, variant: str, shape: str, valid: int, total: int) -> None: ...
    def build_started(self, job: Job) -> None: ...
    def result(self, result: Result, best: Result | None) -> None: ...
    def finished(self, summary: "Summary") -> None: ...


class NullObserver:
    def target_started(self, *a) -> None: ...
    def build_started(self, *a) -> None: ...
    def result(self, *a) -> None: ...
    def finished(self, *a) -> None: ...


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
    interrupted: bool = False
    best: dict[tuple[str, str, str | None], Result] = field(default_factory=dict)

    @property
    def gpu_idle_share(self) -> float:
        capacity = self.wall_seconds * self.gpu_slots
        return max(0.0, 1.0 - self.gpu_seconds / capacity) if capacity > 0 else 0.0

    @property
    def configs_per_minute(self) -> float:
        return 60.0 * self.evaluated / self.wall_seconds if self.wall_seconds > 0 else 0.0


@dataclass(frozen=True)
class SweepOptions:
    strategy: str = "grid"
    seed: int = 0
    max_evals: int | None = None
    time_limit: float | None = None
    patience: int | None = None
    shapes: tuple[str, ...] | None = None
    variants: tuple[str, ...] | None = None
    lookahead: int | None = None  # builds queued ahead of the runs (default: 2 × build jobs)
    record_pruned: bool = True


class Sweep:
    def __init__(self, spec: Spec, store: Store, executor, options: SweepOptions = SweepOptions(),
                 observer: Observer | None = None, strategy_factory: Callable | None = None):
        self.spec = spec
        self.store = store
        self.executor = executor
        self.options = options
        self.observer = observer or NullObserver()
        self.summary = Summary(gpu_slots=executor.run_slots)
        self._make_strategy = strategy_factory or _default_strategy_factory
        self._references: dict[tuple[str, str], Mapping[str, float] | None] = {}

    # -- top level ---------------------------------------------------------------------
    def run(self) -> Summary:
        start = time.monotonic()
        self.store.set_meta("spec", str(self.spec.path) if self.spec.path else None)
        self.store.set_meta("objective", {"metric": self.spec.objective.metric,
                                          "direction": self.spec.objective.direction})
        try:
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
                        break
                    self._sweep_target(shape, variant, budget)
        except KeyboardInterrupt:
            self.summary.interrupted = True
            self.executor.shutdown(cancel=True)
            raise
        finally:
            self.summary.wall_seconds = time.monotonic() - start
            self.observer.finished(self.summary)
        return self.summary

    def _sweep_target(self, shape, variant, budget: Budget) -> None:
        space = self.spec.space(shape.name, variant.name)
        self.store.set_meta(f"params:{variant.name}:{shape.name}", list(space.names))
        self.observer.target_started(variant.name, shape.name, len(space), space.raw_size)
        factory = JobFactory(self.spec, shape, variant, space)
        if self.options.record_pruned and space.raw_size <= PRUNED_RECORD_LIMIT:
            self._record_pruned(space, variant.name, shape.name)
        if len(space) == 0:
            return
        strategy = self._make_strategy(self.options.strategy, space, self.options.seed, budget.max_evals)
        # the harness builds alongside the first configs; runs start once it is there
        harness = _Harness(factory.harness, self) if factory.harness else None
        reference = self._reference(space, factory, variant.name, shape.name, strategy, budget, harness)
        self._loop(space, factory, strategy, budget, reference, harness)

    # -- the pipeline --------------------------------------------------------------------
    def _loop(self, space, factory: JobFactory, strategy, budget: Budget, reference,
              harness: "_Harness | None" = None) -> None:
        builds: dict[Future, Job] = {}
        ready: list[tuple[Job, BuildResult]] = []
        runs: dict[Future, tuple[Job, BuildResult]] = {}
        lookahead = self.options.lookahead or 2 * getattr(self.executor, "build_jobs", 1) + self.executor.run_slots
        exhausted = False
        while True:
            in_flight = len(builds) + len(ready) + len(runs)
            # feed the build queue
            while not exhausted and len(builds) + len(ready) < lookahead and not budget.exhausted():
                remaining = budget.remaining()
                want = lookahead - len(builds) - len(ready)
                if remaining is not None:
                    want = min(want, remaining - (len(builds) + len(ready) + len(runs)))
                if want <= 0:
                    break
                configs = strategy.ask(want)
                if not configs:
                    exhausted = strategy.exhausted or in_flight == 0
                    break
                for config in configs:
                    job = factory.make(config, phase=_phase(strategy, config))
                    if self._resume(job, strategy, budget) is not None:
                        continue
                    if harness is not None:
                        harness.start()
                    self.observer.build_started(job)
                    builds[self.executor.submit_build(job)] = job
                in_flight = len(builds) + len(ready) + len(runs)
            # start runs on free GPU slots, and queue one more per slot: a slot that finishes a
            # run starts the next at once instead of waiting for this loop (and, on a cluster,
            # the next binary reaches its worker during the run before)
            while ready and len(runs) < RUN_QUEUE_PER_SLOT * self.executor.run_slots and \
                    (harness is None or harness.ready(cancel_on_failure=builds)):
                job, build = ready.pop(0)
                runs[self.executor.submit_run(job, build)] = (job, build)
            if not builds and not runs and not ready:
                if exhausted or budget.exhausted() or strategy.exhausted:
                    return
                continue  # the strategy may propose more now that results are in
            waiting = [*builds, *runs] + ([harness.future] if harness is not None and harness.pending else [])
            done, _ = wait(waiting, timeout=0.25, return_when=FIRST_COMPLETED)
            for fut in done:
                if harness is not None and fut is harness.future:
                    continue
                if fut in builds:
                    job = builds.pop(fut)
                    build = fut.result()
                    self.summary.build_cpu_seconds += build.cpu_seconds
                    if build.stopped:
                        continue
                    if build.harness_failed and harness is not None:
                        harness.failed(build, cancel=builds)
                    if build.status is Status.OK:
                        ready.append((job, build))
                    else:
                        self._finish(job, build, None, strategy, budget)
                else:
                    job, build = runs.pop(fut)
                    outcome = fut.result()
                    if outcome.stopped:
                        continue
                    self._finish(job, build, outcome, strategy, budget, reference)
            if budget.exhausted():
                for fut in [f for f in runs if f.cancel()]:  # queued, not started: past the budget
                    runs.pop(fut)
                if not runs and not builds:
                    return

    def _finish(self, job: Job, build: BuildResult, outcome: RunOutcome | None, strategy, budget: Budget,
                reference: Mapping[str, float] | None = None) -> Result:
        status, message, metrics = build.status, build.message, {}
        gpu: Gpu | None = None
        if outcome is not None:
            status, message, metrics, gpu = outcome.status, outcome.message, outcome.metrics, outcome.gpu
            self.summary.gpu_seconds += outcome.seconds
            if status is Status.OK:
                status, message = self._judge_metrics(metrics, reference, job.is_reference)
        result = Result(
            variant=job.variant, shape=job.shape, params=dict(job.params), derived=dict(job.derived),
            status=status, message=message, metrics=metrics, regs=build.report.registers,
            spills=build.report.spills, smem=build.report.smem, kernels=tuple(build.report.to_json()),
            build_argv=job.build_argv, cache_key=job.cache_key, cached=build.cached, phase=job.phase,
            gpu_index=gpu.index if gpu else None, gpu_name=gpu.name if gpu else None,
            gpu_uuid=gpu.uuid if gpu else None, driver=gpu.driver if gpu else None,
            build_seconds=build.seconds, run_seconds=outcome.seconds if outcome else None,
            finished=time.time(),
        )
        self.store.put(result)
        self._account(result, strategy, budget)
        self.summary.evaluated += 1
        return result

    def _judge_metrics(self, metrics, reference, is_reference) -> tuple[Status, str]:
        objective = self.spec.objective.metric
        if objective not in metrics:
            return Status.NO_RESULT, f"objective '{objective}' missing from @@RESULT ({', '.join(metrics) or 'no keys'})"
        check = self.spec.check
        if not check.active:
            return Status.OK, ""
        problem = verify(metrics, check, None if is_reference else reference)
        if problem:
            return Status.CHECKSUM_MISMATCH, problem
        if check.reference == "defaults" and reference is None and not is_reference:
            return Status.OK, "unverified: the reference (defaults) config failed"
        return Status.OK, ""

    def _account(self, result: Result, strategy, budget: Budget) -> None:
        value = result.value(self.spec.objective.metric)
        if value is not None and self.spec.objective.direction == "max":
            value = -value
        strategy.tell(dict(result.params), value)
        budget.record(value)
        self.summary.counts[result.status.value] = self.summary.counts.get(result.status.value, 0) + 1
        key = (result.variant, result.shape, result.gpu_name)  # GPU models are never ranked together
        best = self.summary.best.get(key)
        v = result.value(self.spec.objective.metric)
        if v is not None and (best is None or self.spec.objective.better(v, best.value(self.spec.objective.metric))):
            self.summary.best[key] = best = result
        self.observer.result(result, best)

    def _resume(self, job: Job, strategy, budget: Budget) -> Result | None:
        """The stored result of a finished config with the same build key, told to the strategy."""
        old = self.store.get(job.variant, job.shape, job.config_id)
        if old is None or old.status is Status.PRUNED or old.cache_key != job.cache_key:
            return None
        self.summary.resumed += 1
        self._account(old, strategy, budget)
        return old

    # -- reference and pruned configs -------------------------------------------------
    def _reference_config(self, space) -> dict | None:
        """The config every other is checked against: the defaults, or kernel mode's own choice."""
        defaults = {p.name: p.default for p in space.params}
        k = self.spec.kernel
        if k is not None:
            if isinstance(k.reference, dict):
                return {**defaults, **k.reference}
            return defaults if k.reference == "defaults" else None
        return defaults if self.spec.check.reference == "defaults" else None

    def _reference(self, space, factory: JobFactory, variant: str, shape: str, strategy, budget,
                   harness: "_Harness | None" = None):
        defaults = self._reference_config(space)
        if defaults is None:
            return None
        verdict = space.explain(defaults) if set(defaults) == set(space.names) else None
        if verdict is None or not verdict.ok:
            why = f"{verdict.constraint}: {verdict.reason}" if verdict else "it does not name every parameter"
            key = "kernel.reference" if self.spec.kernel is not None else "check.reference"
            raise SpecError(f"the reference config is not valid for shape {shape}, variant {variant}: {why}",
                            path=self.spec.label, key=key)
        strategy.proposed.add(tuple(defaults[n] for n in space.names))  # never proposed again
        job = factory.make(defaults, phase="reference", is_reference=True)
        old = self._resume(job, strategy, budget)
        if old is not None:
            return dict(old.metrics) if old.status is Status.OK else None
        if harness is not None:
            harness.start()
        self.observer.build_started(job)
        build = self.executor.submit_build(job).result()
        self.summary.build_cpu_seconds += build.cpu_seconds
        if build.harness_failed and harness is not None:
            harness.failed(build)
        if build.status is not Status.OK:
            self._finish(job, build, None, strategy, budget)
            return None
        if harness is not None:
            harness.wait()
        outcome = self.executor.submit_run(job, build).result()
        result = self._finish(job, build, outcome, strategy, budget)
        return dict(result.metrics) if result.status is Status.OK else None

    def _record_pruned(self, space, variant: str, shape: str) -> None:
        names = space.names
        rows = []
        for values in itertools.product(*(p.values for p in space.params)):
            config = dict(zip(names, values))
            if config in space:
                continue
            if self.store.get(variant, shape, config_id(config)) is not None:
                continue
            try:
                verdict = space.explain(config)
                derived = space.derive(config)
            except SpecError as exc:
                verdict, derived = None, {}
                message = str(exc)
            else:
                message = f"{verdict.constraint}: {verdict.reason}"
            rows.append(Result(variant=variant, shape=shape, params=config, derived=derived,
                               status=Status.PRUNED, message=message, finished=time.time()))
        if rows:
            self.store.put_many(rows)
        if rows or space.raw_size > len(space):
            self.summary.counts["PRUNED"] = self.summary.counts.get("PRUNED", 0) + (space.raw_size - len(space))


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
        self.future.result()
        self.ready()

    def failed(self, build: BuildResult, cancel=()) -> None:
        """A config's build found its harness broken (one it links): stop the sweep."""
        for fut in cancel:
            fut.cancel()
        self.wait()  # raises with the compiler's words
        raise KsweepError(f"{self._sweep.spec.label}: {build.message}")  # a build worker's own copy failed

    def _check(self, build: BuildResult) -> None:
        self._checked = True
        self._sweep.summary.build_cpu_seconds += build.cpu_seconds
        if build.stopped:
            raise KeyboardInterrupt
        if build.status is not Status.OK:
            log = "\n".join(build.log.strip().splitlines()[-20:])
            raise KsweepError(f"{self._sweep.spec.label}: the harness ([build.harness]) did not build: "
                              f"{build.message or 'no message'}" + (f"\n{log}" if log else ""))


def _phase(strategy, config) -> str | None:
    phase_of = getattr(strategy, "phase_of", None)
    return phase_of(config) if phase_of else None


def _default_strategy_factory(name: str, space, seed: int, max_evals: int | None):
    from ..strategies import make_strategy

    return make_strategy(name, space, seed=seed, budget_hint=max_evals)
