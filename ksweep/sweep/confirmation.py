"""The confirmation phase of one shape × variant: its leaders and the default measured again
in interleaved rounds (the rules are ``confirm.py``'s; what is owed, ``store/owed.py``'s).

Its steps: take the plan a stopped run left owed, else choose one (the ``k`` best of the
search's results, the default config, evaluated first when it was not, and the best of an
earlier confirmation) and record it; build every config; run the rounds the plan lacks;
then nothing is owed. Each run is stored as a measurement at once, so a kill loses none,
and the next run resumes the plan where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Mapping

from ..verify import confirm
from ..build.builder import BuildResult
from ..gpu import physics
from ..job import Job, config_id
from ..result import Measurement, Result
from ..run.program import RunOutcome
from ..status import Status, Stopped
from ..store import owed as owing
from ..store.owed import OwedConfirmation
from .context import SweepContext
from .waiting import wait_for

if TYPE_CHECKING:
    from .pipeline import Target


class ConfirmationPhase:
    """One confirmation, run by the sweep ``sweep`` after ``target``'s search."""

    def __init__(self, sweep: SweepContext, target: "Target", variant: str, shape: str):
        self.sweep, self.target, self.variant, self.shape = sweep, target, variant, shape
        self.store, self.options = sweep.store, sweep.options
        self.plan = self.options.confirm

    def run(self) -> None:
        started = time.monotonic()
        # the results of this experiment: those that stood when the target started (same result
        # key, a GPU model of this run) and those this run evaluated
        t = self.target
        current = {config_id(r.params): r for r in
                   (*t.stored.values(), *(e.result for e in t.order if e.result is not None))}
        owes = self.plan.owed
        planned = (self._owed(current) if owes else None) or self._choose(current, record=owes)
        if planned is None:
            return
        plan, jobs, results = planned
        done = plan.done(self.store.measurements(self.variant, self.shape), results)
        self._measure_rounds(plan, jobs, done)
        if owes:
            owing.end(self.store, self.variant, self.shape)
        self.sweep.summary.confirm_seconds += time.monotonic() - started

    # -- which configs --------------------------------------------------------------------
    def _owed(self, current: Mapping[str, Result]):
        """The plan a stopped run left, when it still stands: (plan, jobs, results) or None."""
        plan = owing.owed(self.store, self.variant, self.shape)
        if plan is None:
            return None
        results = {cid: current.get(cid) or self.store.get(self.variant, self.shape, cid) for cid in plan.configs}
        # another experiment now (a result measured again, other settings, --rerun all: the
        # results it was chosen from are to be measured anew): chosen anew
        if plan.rounds != self.plan.rounds or plan.how != _how(self.plan) or self.options.rerun == "all" or \
                not plan.stands(results) or not all(r.status is Status.OK for r in results.values()):
            owing.end(self.store, self.variant, self.shape)  # another experiment now: chosen anew
            return None
        factory = self.target.factory
        default = self.store.default_configs().get((self.variant, self.shape))
        jobs = {}
        for cid in plan.configs:
            params = dict(results[cid].params)
            is_reference = cid == default and self.sweep.mode.reference_config(self.sweep.spec, params) == params
            jobs[cid] = factory.make(params, phase="confirm", is_reference=is_reference)
        if any(jobs[cid].cache_key != plan.keys[cid] for cid in plan.configs):
            owing.end(self.store, self.variant, self.shape)
            return None
        return plan, jobs, results

    def _choose(self, current: Mapping[str, Result], record: bool = True):
        """A new plan, recorded before its first run (unless ``record`` is False): (plan, jobs,
        results), or None (nothing to confirm)."""
        sweep, plan, factory, space = self.sweep, self.plan, self.target.factory, self.target.space
        objective = sweep.spec.objective
        leaders = confirm.choose(owing.candidates(current.values()), objective.metric, objective.direction,
                                 plan.k, plan.within)
        jobs: dict[str, Job] = {cid: factory.make(dict(current[cid].params), phase="confirm") for cid in leaders}
        defaults = {p.name: p.default for p in space.params}  # the default config: the speed-up's baseline
        if plan.default and defaults in space:
            is_reference = sweep.mode.reference_config(sweep.spec, dict(defaults)) == defaults
            job = factory.make(defaults, phase="confirm", is_reference=is_reference)
            self.store.set_meta(f"default:{self.variant}:{self.shape}", job.config_id)  # the speed-up's baseline
            if job.config_id not in jobs:
                stored = self.store.get(self.variant, self.shape, job.config_id)
                rerun = self.options.rerun == "all" and job.config_id not in current  # not evaluated by this sweep
                if stored is None or stored.cache_key != job.cache_key or rerun:  # it is now, as part of the
                    # confirmation (not counted by --max-evals, nor shown as progress)
                    build, outcome = self.measure(replace(job, phase="default"))
                    stored = sweep.record.finish(replace(job, phase="default"), build, outcome, self.target.reference,
                                          observe=False)
                    sweep.summary.confirm_runs += 1
                if stored.status is Status.OK:  # a failed one (a hang: a timeout a round) is not run again
                    jobs[job.config_id] = job
        measurements = self.store.measurements(self.variant, self.shape)
        best = self._incumbent(current, measurements)
        if best is not None and best not in jobs:  # the best of an earlier confirmation, pushed out of the k
            jobs[best] = factory.make(dict(current[best].params), phase="confirm")
        if not jobs:
            return None
        results = {cid: current.get(cid) or self.store.get(self.variant, self.shape, cid) for cid in jobs}
        since = time.time()
        everything = OwedConfirmation(self.variant, self.shape, tuple(jobs), {c: j.cache_key for c, j in jobs.items()},
                                      plan.rounds, since, frozenset(jobs) if self.options.rerun == "all" else frozenset(),
                                      _how(plan))
        done = everything.done(measurements, results)
        fresh = set(everything.fresh)
        if any(not any((cid, r) in done for r in range(plan.rounds)) for cid in jobs):
            # a config never confirmed: those confirmed in full before (the best so far, the default)
            # are measured again with it, in the same rounds, so that they compare round by round
            # and not across sessions (a round cut short keeps its runs: it has no such config)
            fresh |= {cid for cid in jobs if all((cid, r) in done for r in range(plan.rounds))}
        chosen = replace(everything, fresh=frozenset(fresh))
        if record:
            owing.begin(self.store, chosen)
        return chosen, jobs, results

    def _incumbent(self, current: Mapping[str, Result], measurements: list[Measurement]) -> str | None:
        """The BEST of the confirmation runs stored for the results that stand, if it is OK."""
        conf = confirm.confirmed(list(current.values()), measurements, self.sweep.spec.objective.direction,
                                 self.store.default_configs()).get((self.variant, self.shape))
        best = conf.best if conf is not None else None
        return best if best in current and current[best].status is Status.OK else None

    # -- the runs ---------------------------------------------------------------------------
    def _measure_rounds(self, plan: OwedConfirmation, jobs: Mapping[str, Job], done: set) -> None:
        # every build first, side by side (cache hits, usually): then the runs of one round
        # follow each other within seconds, as the round-by-round comparison assumes, and a
        # build missing from the cache does not hold the GPU for its time
        # (each build's result serves the job's next run: an executor may hold what it built
        # until a run takes it, as the Dask one does)
        sweep = self.sweep
        todo = [cid for cid in plan.configs if any((cid, r) not in done for r in range(plan.rounds))]
        if todo and self.target.harness is not None:
            self.target.harness.wait()
        built: dict[str, BuildResult] = {}
        for cid, future in [(cid, sweep.executor.submit_build(jobs[cid])) for cid in todo]:
            built[cid] = wait_for(future)
            if isinstance(built[cid], Stopped):
                raise KeyboardInterrupt
        for round_ in range(plan.rounds):
            for cid in confirm.order(list(plan.configs), round_):
                if (cid, round_) in done:
                    continue
                job = jobs[cid]
                build, outcome = self.measure(job, built.pop(cid, None))
                self.store.put_measurement(self._measurement(job, build, outcome, round_))
                sweep.summary.confirm_runs += 1

    def measure(self, job: Job, build: BuildResult | None = None) -> tuple[BuildResult, RunOutcome | None]:
        """Build (a cache hit, usually; ``build``: built already, for this run) and run one job
        now, waiting in short steps (Ctrl-C)."""
        sweep = self.sweep
        if self.target.harness is not None:
            self.target.harness.wait()
        if build is None:
            build = wait_for(sweep.executor.submit_build(job))
        if isinstance(build, Stopped):
            raise KeyboardInterrupt
        if build.status is not Status.OK:
            return build, None
        outcome = wait_for(sweep.executor.submit_run(job, build))
        if isinstance(outcome, Stopped):
            raise KeyboardInterrupt
        sweep.summary.gpu_seconds += outcome.seconds
        return build, outcome

    def _measurement(self, job: Job, build: BuildResult, outcome: RunOutcome | None, round_: int) -> Measurement:
        if outcome is None:
            return Measurement(job.variant, job.shape, dict(job.params), job.cache_key, round_, build.status,
                               message=build.message)
        gpu, metrics = outcome.gpu, physics.with_efficiency(outcome.metrics, job.work)
        reference = None if job.is_reference else self.target.reference
        status, message, _ = self.sweep.record.judged(job, outcome, metrics, reference)
        value = metrics.get(self.sweep.spec.objective.metric) if status is Status.OK else None
        return Measurement(job.variant, job.shape, dict(job.params), job.cache_key, round_, status,
                           value=float(value) if value is not None else None, message=message, metrics=metrics,
                           gpu_name=gpu.name if gpu else None, gpu_uuid=gpu.uuid if gpu else None,
                           gpu_state=dict(outcome.gpu_state))


def _how(plan) -> str:
    """The settings that choose a confirmation's configs (K, within, the default), as a plan records them."""
    return f"k={plan.k} within={plan.within} default={plan.default}"
