"""The pipeline of one shape × variant: ask → build → run → tell.

The strategy is asked one config at a time while fewer than ``window`` configs are asked
but not told (a strategy whose proposals do not depend on its results, ``adaptive`` false:
while fewer than ``window`` are in flight, so that one slow build does not hold back the
builds and runs behind it); a config already in the store has its result at once, the others are built
(ahead of the runs: the GPU does not wait on the compiler; as many at once as the executor
has build slots, the others queued and started in the order asked or, while a GPU slot has
nothing to run, the one expected to build soonest: ``build_order.py``; one whose build is
already under way waits for it without a build slot, then runs right after it) and run on
free GPU slots. Each
finished build or run is judged, stored and shown at once (``record.py``), but told to the
strategy in the order asked, so a seeded search sees one sequence of events whatever the
timing, and a resumed one proposes what an uninterrupted one does. A harness
(``[build.harness]``) builds beside the first configs; no run starts before it is there.

Configs whose builds are one program (``programs.py``) and whose runs are the same are run
once: the first is run, and its result is stored for the others too, each with a note
("same program as #12: measured once"). A knob that changes no program is named as soon as
the builds show it; when the first builds of a search are all one program although every
knob took two values, the sweep stops, nothing of it stored (a build that varies the knobs
the strategy's first configs do not is built first, to tell sooner).
"""

from __future__ import annotations

import contextlib
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Mapping

from ..build.builder import BuildResult
from ..errors import KsweepError, SystematicFailure
from ..job import Job
from ..result import Result
from ..run.program import RunOutcome
from ..status import Status, Stopped
from ..strategies.base import Budget, space_size
from .build_order import BuildCosts, next_build
from .jobs import JobFactory
from .context import SweepContext
from .programs import DeadKnobs, SameProgramGuard, probe
from .waiting import WAIT_STEP, wait_for


RUN_QUEUE_PER_SLOT = 2  # runs handed to the executor per GPU slot: the one running and the next


@dataclass
class Entry:
    """One asked config: its job, and its result once stored (or found in the store)."""

    job: Job
    result: Result | None = None
    resumed: bool = False
    remeasured: bool = False  # its first run was throttled and it was run again
    program: str | None = None  # its build's program and its run (programs.py), when it can share one




class Target:
    """The pipeline of one shape × variant: asks, builds, runs, stores, and tells in order."""

    def __init__(self, sweep: SweepContext, space, factory: JobFactory, strategy, budget: Budget,
                 stored: dict[str, Result], window: int, harness: "Harness | None"):
        self.sweep, self.space, self.factory, self.strategy = sweep, space, factory, strategy
        self.budget, self.stored, self.window, self.harness = budget, stored, window, harness
        self.executor = sweep.executor
        self.standing: dict[str, Result] = {}  # the stored results of this experiment, reused or not (stored)
        self.reference: Mapping[str, float] | None = None
        self.order: list[Entry] = []  # every asked config, in the order asked
        self.told = 0  # entries told to the strategy (a prefix of order)
        self.fresh = 0  # asked configs not found in the store (evaluated by this run)
        self.builds: dict[Future, Entry] = {}
        # asked configs whose builds wait for a build slot: started in the order asked, or, while a
        # GPU slot has nothing to run, the one expected to build soonest (build_order.py)
        self.queued: list[Entry] = []
        self.costs = BuildCosts()
        self.ready: list[tuple[Entry, BuildResult]] = []
        self.runs: dict[Future, tuple[Entry, BuildResult]] = {}
        self.done_asking = False
        # configs measured once per program: the first entry of each program, the entries waiting for its run
        self.measured: dict[str, Entry | Result] = {}
        self.waiting: dict[str, list[tuple[Entry, BuildResult]]] = {}
        self._stored_programs: dict[str, Result] | None = None
        self.knobs = DeadKnobs([p.name for p in space.params if len(p.values) > 1])
        size = space_size(space)
        # the first builds of a search: held until they show that a knob changes the program
        self.guard = SameProgramGuard({p.name: p.values for p in space.params}, size) if not stored else None
        if self.guard is not None and self.guard.open:
            sweep.record.hold_runs()
        self.probes: dict[Future, Job] = {}  # a build that varies the knobs the first configs do not
        self._probed = 0
        # while the guard decides, at most guard.most builds (a probe among them) are started; the
        # configs asked beyond them wait here (asked and told as ever: only their builds wait)
        self.deferred: list[Entry] = []
        self.submitted: list[Mapping] = []  # the configs whose builds were started while it decides

    # -- asking and telling, in one fixed order --------------------------------------
    def _may_ask(self) -> bool:
        if self.done_asking or self._ahead() >= self.window:
            return False
        b = self.budget
        if b.max_evals is not None and len(self.stored) + self.fresh >= b.max_evals:
            return False
        return not b.exhausted_by_time_or_patience()

    def _ahead(self) -> int:
        """What the window bounds: the configs asked and not told, or, for a strategy whose
        proposals do not depend on its results, those of them still in flight (not finished).
        With ``--patience``, which counts results in the order told, asked and not told: past a
        slow build the search would otherwise go on long after patience ends it."""
        if getattr(self.strategy, "adaptive", True) or self.budget.patience is not None:
            return len(self.order) - self.told
        return sum(1 for e in self.order[self.told:] if e.result is None)

    def _fill(self) -> None:
        while self._may_ask():
            configs = self.strategy.ask(1)
            if not configs:
                self.done_asking = self.strategy.exhausted
                return
            job = self.factory.make(configs[0], phase=self.strategy.phase_of(configs[0]))
            self._submit(job)

    def _submit(self, job: Job) -> Entry:
        entry = Entry(job)
        self.order.append(entry)
        old = self.stored.get(job.config_id)
        if old is not None:  # shown and counted when the target started
            entry.result, entry.resumed = old, True
            return entry
        self.fresh += 1
        if self._deciding() and len(self.submitted) >= self.guard.most - 1:  # one place kept for a probe
            self.deferred.append(entry)
            return entry
        self._build(entry)
        return entry

    def _build(self, entry: Entry) -> None:
        if self.harness is not None:
            self.harness.start()
        self.queued.append(entry)
        if self._deciding():
            self.submitted.append(entry.job.params)
        self._pump()

    def _pump(self) -> None:
        """Start the runs that can start, then queued builds while the executor has a free build
        slot (whether a GPU slot will wait is read after the runs started). A config whose build
        is one already under way (a knob its build does not read) waits for it, keeping no build
        slot: that build done, it is the cache's at once, and runs right after the first."""
        self._start_runs()
        slots = max(1, self.executor.build_jobs)
        while self.queued and len(self.builds) < slots:
            building = {e.job.build_cache_key for e in self.builds.values()}
            free = [i for i, e in enumerate(self.queued) if e.job.build_cache_key not in building]
            if not free:
                return
            # nothing built waits to run, and a GPU slot has no next run queued: it will wait
            starving = not self.ready and len(self.runs) < RUN_QUEUE_PER_SLOT * self.executor.run_slots
            pick = next_build([self.queued[i].job.params for i in free], self.costs, starving)
            entry = self.queued.pop(free[pick])
            self.sweep.observer.build_started(entry.job)
            self.builds[self.executor.submit_build(entry.job)] = entry

    def _deciding(self) -> bool:
        return self.guard is not None and self.guard.open

    def _advance(self) -> None:
        """Tell every result whose turn has come, asking for more after each one (asked configs
        found in the store have their result at once, and are told in their turn too)."""
        while True:
            while self.told < len(self.order) and self.order[self.told].result is not None:
                entry = self.order[self.told]
                self.told += 1
                self.sweep.record.tell(entry.result, self.strategy, self.budget, counted=not entry.resumed)
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
            self._pump()
            if not self.builds and not self.runs and not self.ready and self.deferred:
                self._end_guard()  # nothing more to tell it: what it held is stored, the builds it kept back start
            if not self.builds and not self.runs and not self.ready:
                if self.told < len(self.order):  # an asked config neither in flight nor finished
                    raise RuntimeError(f"ksweep bug: {self.order[self.told].job.label} was lost")
                self._end_guard()  # undecided: what it held is stored
                return  # nothing in flight, nothing more to ask
            self._step()
            if self.budget.exhausted_by_time_or_patience():
                self._cancel_queued()
                if not self.builds and not self.runs:
                    self._end_guard()
                    return

    def _step(self) -> None:
        """Start what can start, wait a little for something to finish, and store it."""
        self._pump()
        waiting = [*self.builds, *self.runs, *self.probes]
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
            if fut in self.probes:
                self._probe_built(self.probes.pop(fut), fut.result())
            elif fut in self.builds:
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

    def _built(self, entry: Entry, build: BuildResult | Stopped) -> None:
        if isinstance(build, Stopped):
            raise KeyboardInterrupt  # Ctrl-C reached the build first
        self.sweep.summary.build_cpu_seconds += build.cpu_seconds
        self.costs.learn(entry.job.params, build)
        if build.failed_harness is not None and self.harness is not None:
            self.harness.failed(build, cancel=self.builds)
        self._program_seen(entry.job, build)
        if build.status is not Status.OK:
            entry.result = self.sweep.record.finish(entry.job, build, None)
            return
        entry.program = self._program(entry.job, build)
        first = self.measured.get(entry.program) if entry.program else None
        if first is None:
            first = self._stored_program(entry.program)
        if first is None:
            if entry.program:
                self.measured[entry.program] = entry
            self.ready.append((entry, build))
        elif isinstance(first, Result) or first.result is not None:  # measured: its result is this one's
            result = first if isinstance(first, Result) else first.result
            entry.result = self.sweep.record.same_program(entry.job, build, result, self._harness_deps())
        else:  # its run is to come
            self.waiting.setdefault(entry.program, []).append((entry, build))

    # -- one program, measured once ------------------------------------------------------------
    def _program(self, job: Job, build: BuildResult) -> str | None:
        """What the run of ``job`` built as ``build`` measures (its program and its run), or None
        when it is run on its own: no code digest, a run that may read more than the program,
        the reference (the others are checked against it), an executor whose runs read the
        config's parameters themselves (a stand-in backend)."""
        if build.code is None or job.run_key is None or job.is_reference or \
                self.executor.runs_read_params:
            return None
        return f"{build.code}:{job.run_key}"

    def _stored_program(self, program: str | None) -> Result | None:
        """A result stored before this run whose config built ``program`` and was run."""
        if program is None:
            return None
        if self._stored_programs is None:
            self._stored_programs = {}
            for r in self.stored.values():  # the reference's own verdict is not another config's
                if r.code is None or r.status.build_failure or r.status is Status.PRUNED or r.phase == "reference":
                    continue
                try:
                    job = self.factory.make(dict(r.params))
                except KsweepError:
                    continue
                if job.run_key is not None and not job.is_reference:
                    self._stored_programs.setdefault(f"{r.code}:{job.run_key}", r)
        return self._stored_programs.get(program)

    def _share(self, entry: Entry) -> None:
        """``entry`` was measured: the configs that built its program get its result."""
        for other, build in self.waiting.pop(entry.program, []) if entry.program else ():
            other.result = self.sweep.record.same_program(other.job, build, entry.result, self._harness_deps())

    def _harness_deps(self) -> tuple:
        return self.harness.deps if self.harness is not None else ()

    def _program_seen(self, job: Job, build: BuildResult) -> None:
        """What a finished build of the search says of the knobs (its program and its run: a
        knob passed to the run command changes what is measured): dead ones named, and the first
        builds' guard (held results stored once it is decided; the sweep stopped when no knob
        changes the program)."""
        config = job.params
        code = f"{build.code}:{job.run_key}" if build.code is not None and job.run_key is not None and \
            build.status is not Status.COMPILE_ERROR and not self.executor.runs_read_params else None
        if code is not None:
            variant, shape = self.factory.variant.name, self.factory.shape.name
            for knob in self.knobs.see(config, code):
                self.sweep.record.dead_knob(variant, shape, knob)
        guard = self.guard
        if guard is None or not guard.open:
            return
        verdict = guard.see(config, code)
        if verdict == "stop":
            for fut in [*self.builds, *self.probes, *self.runs]:
                fut.cancel()
            self.sweep.record.drop_held_runs()
            raise SystematicFailure(guard.message(self.sweep.spec.label))
        if verdict == "store":
            self._end_guard()
        else:
            self._probe()

    def _end_guard(self) -> None:
        """The first builds' guard decided that a knob changes the program, or cannot tell: what
        it held is stored, the builds it kept back start."""
        if self.guard is not None and self.guard.open:
            self.guard.close()
        for fut in [f for f in self.probes if f.cancel()]:
            self.probes.pop(fut)
        self.sweep.record.release_runs()
        deferred, self.deferred = self.deferred, []
        for entry in deferred:
            self._build(entry)

    def _probe(self) -> None:
        """While the first builds are one program (one at least) and the configs whose builds
        started leave a knob with one value, build a config that varies it, ahead of the builds
        queued (it is cached: when the strategy asks for it, it is not built again)."""
        guard = self.guard
        if self.probes or len(self.submitted) >= guard.most or not self.submitted:
            return
        unvaried = guard.unvaried(self.submitted)
        if not unvaried:
            return
        size = space_size(self.space)
        seen = {n: set(guard.seen[n]) | {c[n] for c in self.submitted} for n in unvaried}
        config = probe(self.space, size, unvaried, seen, seed=self.sweep.options.seed + self._probed)
        if config is None:
            return
        self._probed += 1
        queued = [(f, e) for f, e in list(self.builds.items()) if f.cancel()]  # not started: after the probe
        for f, _ in queued:
            self.builds.pop(f)
        job = self.factory.make(config, phase="probe")
        self.probes[self.executor.submit_build(job)] = job
        self.submitted.append(config)
        for _, e in queued:
            self.builds[self.executor.submit_build(e.job)] = e

    def _probe_built(self, job: Job, build: BuildResult | Stopped) -> None:
        if isinstance(build, Stopped):
            raise KeyboardInterrupt
        self.sweep.summary.build_cpu_seconds += build.cpu_seconds
        self._program_seen(job, build)

    def _ran(self, entry: Entry, build: BuildResult, outcome: RunOutcome | Stopped) -> None:
        if isinstance(outcome, Stopped):
            raise KeyboardInterrupt
        if outcome.status is Status.OK and outcome.gpu_state.get("throttled") and not entry.remeasured:
            entry.remeasured = True  # measured while throttled: once more (kept, flagged, if again)
            self.sweep.summary.note_gpu_state(outcome.gpu_state)
            self.runs[self.executor.submit_run(entry.job, build)] = (entry, build)
            return
        entry.result = self.sweep.record.finish(entry.job, build, outcome,
                                         None if entry.job.is_reference else self.reference, self._harness_deps())
        self._share(entry)

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
                if not isinstance(build, Stopped) and build.status is not Status.OK and build.failed_harness is None:
                    with contextlib.suppress(KsweepError):
                        entry.result = self.sweep.record.finish(entry.job, build, None)

    def _cancel_queued(self) -> None:
        for fut in [f for f in self.runs if f.cancel()]:  # queued, not started: past the budget
            self.runs.pop(fut)
        for fut in [f for f in (*self.builds, *self.probes) if f.cancel()]:
            self.builds.pop(fut, None)
            self.probes.pop(fut, None)
        self.ready.clear()
        self.deferred.clear()
        self.queued.clear()
        # what was asked but will not be evaluated is never told: it leaves the order
        in_flight = {id(e) for e in self.builds.values()} | {id(e) for e, _ in self.runs.values()}
        self.order = self.order[: self.told] + [e for e in self.order[self.told:]
                                                if e.result is not None or id(e) in in_flight]
        self.done_asking = True


class Harness:
    """The build of a shape × variant's harness, started with the first config that needs
    building: no run starts before it is there, and a harness that does not build stops
    the sweep (every config would fail the same way)."""

    def __init__(self, job: Job, sweep: SweepContext):
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
        wait_for(self.future)  # in steps: Ctrl-C is handled between them
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
