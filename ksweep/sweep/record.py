"""One result of a sweep: a finished build (and run) judged, stored and shown at once, and
told to the strategy in its turn.

A status is decided where the contract says (``run/classify.py`` for a run, ``verify.judge``
for an OK run's metrics, the builder for a build); this module puts them together into the
stored ``Result``, holds compile errors until ``sweep/systematic.py`` has seen whether they
are every config's, and keeps the run's counts for its summary.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Mapping

from ..build.builder import BuildResult
from ..errors import EnvironmentProblem, SystematicFailure
from ..gpu import physics
from ..job import Job, config_id
from ..observer import Observer
from ..result import Result
from ..run.environment import build_problem, run_problem
from ..run.gpus import Gpu
from ..run.program import RunOutcome
from ..spec.model import Spec
from ..status import Status
from ..store.sqlite import Store
from ..strategies.base import Budget
from ..verify.checks import judge
from .options import Summary
from .systematic import SameErrorGuard


class Recorder:
    """Judges, stores, shows and counts the results of one sweep."""

    def __init__(self, spec: Spec, store: Store, summary: Summary, observer: Observer,
                 gpu_models: set[str] | None):
        self.spec, self.store, self.summary, self.observer = spec, store, summary, observer
        self._gpu_models = gpu_models
        self._same_error = SameErrorGuard()
        self._held_runs: list[Result] | None = None  # kept back while the first builds' program guard decides

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
            self.note(*outcome.notes)
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
            gpu_state=dict(outcome.gpu_state) if outcome is not None else {}, code=build.code,
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
                    "command (a parameter whose -D macro rewrites an identifier of the program? give it the "
                    "name of a macro the source reads, define = \"NAME\" or [sweep] define_prefix; `ksweep plan` "
                    "warns of such names and says which macro)")
            if verdict == "hold":
                return result
            for held in self._same_error.release():
                self._store(held)
        if observe:
            self._keep(result)
        else:
            self.store.put(result)
        return result

    def note(self, *notes: str) -> None:
        """Keep what the user should know of the run, each note once (the summary's ``notes``)."""
        self.summary.notes.extend(n for n in dict.fromkeys(notes) if n not in self.summary.notes)
    def same_program(self, job: Job, build: BuildResult, measured: Result, harness_deps: tuple = ()) -> Result:
        """A config whose build made the program that ``measured``'s run measured, with the same
        run: that run's result, stored for it too (``same_as``: the config measured), with
        its own build's figures and no run of its own."""
        result = replace(
            measured, params=dict(job.params), derived=dict(job.derived), **build.report.result_fields(),
            build_argv=job.build_argv, cache_key=job.cache_key, cached=build.cached, phase=job.phase,
            build_seconds=build.seconds, run_seconds=None, started=None, finished=time.time(),
            deps=tuple(dict.fromkeys((*build.deps, *harness_deps, *job.inputs))), revision=None, code=build.code,
            same_as=measured.same_as or config_id(measured.params))
        self.summary.shared += 1
        self._keep(result)
        return result

    def _keep(self, result: Result) -> None:
        if self._held_runs is not None:
            self._held_runs.append(result)
        else:
            self._store(result)

    def hold_runs(self) -> None:
        """Keep the results back (the first builds of a search: programs.SameProgramGuard)."""
        self._held_runs = []

    def release_runs(self) -> None:
        """Store the results kept back, in their order; keep none from now on."""
        held, self._held_runs = self._held_runs or [], None
        for result in held:
            self._store(result)

    def drop_held_runs(self) -> None:
        """The sweep stops (no knob changes the program): what was kept back is not stored."""
        self._held_runs = None

    def dead_knob(self, variant: str, shape: str, knob) -> None:
        """A knob the builds show changes no program (programs.DeadKnob): kept for the summary, shown."""
        self.summary.dead_knobs.append((variant, shape, knob))
        told = getattr(self.observer, "dead_knob", None)  # optional: an observer written before it needs none
        if told is not None:
            told(variant, shape, knob.line)

    def judged(self, job: Job, outcome: RunOutcome, metrics: Mapping[str, float],
                reference: Mapping[str, float] | None):
        """(status, message, verified) of a finished run (``judged`` below)."""
        return judged(self.spec, job, outcome, metrics, reference)

    def impossible(self, job: Job, metrics: Mapping[str, float], gpu: Gpu | None) -> str | None:
        return impossible(self.spec, job, metrics, gpu)

    def _store(self, result: Result) -> None:
        if result.same_as is not None and not result.message.startswith("same program as"):
            rid = self.store.result_id(result.variant, result.shape, result.same_as)
            which = f"#{rid}" if rid is not None else " ".join(f"{k}={v}" for k, v in json.loads(result.same_as).items())
            note = f"same program as {which}: measured once"
            result = replace(result, message=f"{note}; {result.message}" if result.message else note)
        self.store.put(result)
        self.summary.evaluated += 1
        self._observe(result, resumed=False)

    def flush_held(self) -> None:
        """Store the compile errors kept back by the same-error guard, and the results kept back
        by the program guard (the sweep ends, or Ctrl-C)."""
        for held in self._same_error.release():
            self._store(held)
        self.release_runs()

    def resumed(self, result: Result) -> None:
        self.summary.resumed += 1
        self._observe(result, resumed=True)

    def _observe(self, result: Result, resumed: bool) -> None:
        self.summary.counts[result.status.value] = self.summary.counts.get(result.status.value, 0) + 1
        self.summary.counted.add((result.variant, result.shape, config_id(result.params)))
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



def judged(spec: Spec, job: Job, outcome: RunOutcome, metrics: Mapping[str, float],
           reference: Mapping[str, float] | None):
    """(status, message, verified) of a finished run: its own status, or for a run that ended
    OK, what verify.judge says of its ``metrics`` (every objective measured, the check, the
    physics gate)."""
    if outcome.status is not Status.OK:
        return outcome.status, outcome.message, False
    return judge(metrics, [o.metric for o in spec.objective_list()], spec.check, reference,
                 job.is_reference, outcome.outputs_checked, impossible(spec, job, metrics, outcome.gpu))


def impossible(spec: Spec, job: Job, metrics: Mapping[str, float], gpu: Gpu | None) -> str | None:
    """Why the run's time is below the physics floor of its GPU, or None."""
    p = spec.physics
    if p is None or job.work is None:
        return None
    value = metrics.get(p.time)
    if not isinstance(value, (int, float)):
        return None
    peaks = physics.gpu_peaks(gpu.name if gpu else None, p.peak_tflops, p.bandwidth_gbs, p.dtype)
    return physics.check(float(value), p.unit, physics.floor(job.work, p.dtype, peaks), p.margin)
