"""An executor with no process, no compiler and no GPU: every build and run is answered
from a plan (as Kernel Tuner's simulation runner replays recorded measurements).

    from ksweep.testing import FakeExecutor
    fake = FakeExecutor({(1, 2): (Status.OK, Status.OK, {"ms": 1.5}),
                         (1, 4): (Status.COMPILE_ERROR, None, {}),
                         (2, 2): (Status.OK, Status.HANG, {})})
    Sweep(spec, store, fake).run()

A config is looked up by the values of its parameters in the spec's order (a tuple), or by
its config id (``ksweep.job.config_id``); a function of the ``Job`` may answer instead,
or a recorded dataset (``FakeExecutor.replaying``). A config the plan does not know is a
bug of the test: ``submit_build`` raises ``LookupError`` at once.

Harness builds (``job.is_harness``) are answered by ``harness``; as with the real
executors, a config build that links a harness which did not build fails, the harness's
build its ``failed_harness``, and a run that names one gets a RUN_ERROR outcome. ``STOPPED``
(``ksweep.status``) in place of a status makes that build or run a stopped outcome:
Ctrl-C came first.

Futures are completed when submitted (``completion="immediate"``), by a thread in a
random order (``"shuffled"``: results arrive out of the order asked, as they do from
several GPUs), or when the test says so (``"manual"``: ``release``).
"""

from __future__ import annotations

import math
import random
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..build.builder import BuildResult, built, failed_build, harness_failure
from ..job import Job
from ..run.base import Executor
from ..run.gpus import Gpu
from ..run.classify import not_run
from ..run.program import RunOutcome
from ..status import STOPPED, Status, Stopped

COMPLETIONS = ("immediate", "shuffled", "manual")
SETTLE_SECONDS = 0.001  # "shuffled": how long the thread lets submissions pile up before it picks one
RUN_SECONDS = 0.001  # the GPU time of every fake run


@dataclass(frozen=True)
class Planned:
    """The fake's answer for one config: the build's status, then the run's (None: not run,
    the build failed), the run's metrics, and the failure's message (a default one if
    empty). ``STOPPED`` in place of a status: Ctrl-C came first at that stage."""

    build: Status | Stopped = Status.OK
    run: Status | Stopped | None = Status.OK
    metrics: Mapping[str, float] = field(default_factory=dict)
    message: str = ""
    gpu_state: Mapping[str, Any] = field(default_factory=dict)  # what NVML saw during the run
    # the digest of the program its build makes (BuildResult.code): configs with one code and one run
    # command are measured once; None: unknown, each config measured on its own
    code: str | None = None
    build_seconds: float = 0.0  # the build's wall time it reports (BuildResult.seconds); nothing waits

    def __post_init__(self):
        build_ok = isinstance(self.build, Stopped) or isinstance(self.build, Status) and (
            self.build is Status.OK or self.build.build_failure)
        if not build_ok:
            raise ValueError(f"Planned.build: {self.build!r} is not a build's status: "
                             f"use OK, COMPILE_ERROR, REGS_LIMIT, SPILLS or STOPPED")
        if self.build is Status.OK:
            if self.run is None or not isinstance(self.run, (Status, Stopped)) or self.run is Status.PRUNED:
                raise ValueError(f"Planned.run: {self.run!r} is not a run's status (the build is OK): "
                                 f"use OK, a failure status, or STOPPED")
        elif self.run is not None:
            raise ValueError(f"Planned.run: {self.run!r} for a build that does not succeed ({self.build}): use None")

    @classmethod
    def of(cls, answer: Planned | tuple) -> Planned:
        """A ``Planned`` from itself or a tuple (build, run[, metrics[, message]])."""
        if isinstance(answer, Planned):
            return answer
        if isinstance(answer, tuple) and 2 <= len(answer) <= 4:
            return cls(*answer)
        raise TypeError(f"a FakeExecutor answer is a Planned or a tuple (build status, run status[, metrics"
                        f"[, message]]), not {answer!r}")

    def failure_message(self, status: Status) -> str:
        return self.message or f"{status.value} (planned by FakeExecutor)"


Answer = Planned | tuple  # a tuple: (build status, run status[, metrics[, message]])
HarnessAnswer = Status | Stopped | Callable[[Job], Status | Stopped]


class FakeExecutor(Executor):
    """The executor contract answered from ``answers`` (a mapping from a config's values
    tuple or config id to an ``Answer``, or a function of the ``Job`` returning one, or None
    for a config it does not know).

    ``gpu_models``: one model per GPU slot (``("none",)``: a slot without a GPU; None:
    unknown, as a remote cluster's, with ``run_slots`` slots, whose runs report ``runs_on``). ``harness``: the status of
    every harness build, or a function of the harness's ``Job``. ``completion``: see the
    module. What the driver asked is recorded: ``builds`` (every job submitted to build, in
    order), ``runs`` ((job, the harness path handed to it as ``{harness}``) in order) and
    ``shutdowns`` (the ``cancel`` of each call)."""

    def __init__(self, answers: Mapping[Any, Answer] | Callable[[Job], Answer | None], *,
                 gpu_models: Sequence[str] | None = ("fake",), run_slots: int | None = None, build_jobs: int = 1,
                 harness: HarnessAnswer = Status.OK, completion: str = "immediate", seed: int = 0,
                 runs_on: str = "unknown"):
        if completion not in COMPLETIONS:
            raise ValueError(f"completion={completion!r}: choose one of {', '.join(COMPLETIONS)}")
        if gpu_models is not None and not gpu_models:
            raise ValueError("gpu_models: give at least one model (or None: unknown)")
        slots = run_slots if run_slots is not None else (len(gpu_models) if gpu_models is not None else 1)
        if slots < 1 or build_jobs < 1:
            raise ValueError(f"run_slots={slots}, build_jobs={build_jobs}: each must be at least 1")
        self._answers = answers
        self._models = tuple(gpu_models) if gpu_models is not None else None
        self._runs_on = runs_on  # the model the runs report when ``gpu_models`` is None (unknown before)
        self._slots = slots
        self._build_jobs = build_jobs
        self._harness = harness
        self.completion = completion
        self.builds: list[Job] = []
        self.runs: list[tuple[Job, Path | None]] = []
        self.shutdowns: list[bool] = []
        self._harnesses: dict[str, BuildResult | Stopped] = {}  # by cache key: each is built once
        self._held: list[tuple[Future, Any]] = []
        self.most_pending = 0  # the most builds and runs submitted and not completed at once ("shuffled", "manual")
        self._cond = threading.Condition()
        self._closed = False
        self._rng = random.Random(seed)
        self._thread: threading.Thread | None = None
        if completion == "shuffled":
            self._thread = threading.Thread(target=self._complete_shuffled, name="ksweep-fake", daemon=True)
            self._thread.start()

    @classmethod
    def replaying(cls, dataset, *, metric: str = "ms", **options) -> FakeExecutor:
        """A fake that answers from recorded tuning results (a ``ksweep.replay.Dataset``, or
        a file ``load_dataset`` reads): a recorded value is an OK run with ``{metric: value}``,
        a recorded failure fails the build or the run with its status. The spec's parameters
        must be the dataset's."""
        from ..replay import Dataset, ReplaySpace, load_dataset

        data = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
        space = ReplaySpace(data)

        def answer(job: Job) -> Planned | None:
            try:
                i = space.index(job.params)
            except ValueError:
                return None
            value, status = float(data.values[i]), data.statuses[i]
            if not math.isnan(value):
                return Planned(Status.OK, Status.OK, {metric: value})
            if status.build_failure:
                return Planned(status, None, message=f"{status.value} (recorded in {data.name})")
            failed = status if status.is_failure else Status.RUN_ERROR
            return Planned(Status.OK, failed, message=f"{failed.value} (recorded in {data.name})")

        return cls(answer, **options)

    # -- the contract ------------------------------------------------------------------------
    @property
    def run_slots(self) -> int:
        return self._slots

    @property
    def build_jobs(self) -> int:
        return self._build_jobs

    @property
    def gpu_models(self) -> tuple[str, ...] | None:
        return self._models

    def submit_build(self, job: Job) -> Future:
        self._check_open()
        value = self._build(job)
        with self._cond:
            self.builds.append(job)
        return self._future(value)

    def submit_run(self, job: Job, build: BuildResult) -> Future:
        self._check_open()
        if not isinstance(build, BuildResult) or build.status is not Status.OK:
            raise ValueError(f"submit_run: {job.label or job.shape} has no OK build to run ({build!r})")
        value, harness = self._run(job)
        with self._cond:
            self.runs.append((job, harness))
        return self._future(value)

    def shutdown(self, cancel: bool = False) -> None:
        with self._cond:
            self.shutdowns.append(cancel)
            self._closed = True
            held, self._held = self._held, []
            self._cond.notify_all()
        for fut, value in held:
            if cancel:
                fut.cancel()
            else:
                _complete(fut, value)
        if self._thread is not None:
            self._thread.join()

    # -- "manual" completion ----------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Futures submitted and not completed yet."""
        with self._cond:
            return len(self._held)

    def held(self) -> list[Future]:
        """The pending futures, oldest first."""
        with self._cond:
            return [f for f, _ in self._held]

    def wait_for_submission(self, timeout: float) -> None:
        """Wait until the sweep submits something (or ``timeout`` seconds pass)."""
        with self._cond:
            self._cond.wait(timeout)

    def release(self, n: int | None = None, *, newest_first: bool = False) -> int:
        """Complete the ``n`` oldest (or newest) pending futures, all when None; how many."""
        with self._cond:
            order = self._held[::-1] if newest_first else list(self._held)
            chosen = order if n is None else order[:n]
            ids = {id(f) for f, _ in chosen}
            self._held = [(f, v) for f, v in self._held if id(f) not in ids]
        for fut, value in chosen:
            _complete(fut, value)
        return len(chosen)

    # -- answers -----------------------------------------------------------------------------
    def _plan(self, job: Job) -> Planned:
        answers = self._answers
        if callable(answers):
            answer = answers(job)
        else:
            answer = answers.get(tuple(job.params.values()), answers.get(job.config_id))
        if answer is None:
            raise LookupError(f"FakeExecutor has no answer for {job.variant}/{job.shape} {job.config_id}: "
                              f"add {tuple(job.params.values())!r} (or that config id) to its answers")
        return Planned.of(answer)

    def _harness_built(self, harness: Job) -> BuildResult | Stopped:
        with self._cond:
            known = self._harnesses.get(harness.cache_key)
        if known is not None:
            return known
        status = self._harness(harness) if callable(self._harness) else self._harness
        if isinstance(status, Stopped):
            return STOPPED  # not kept: the next sweep builds it
        if status is Status.OK:
            result = built(_binary(harness))
        else:
            result = failed_build(status, f"{status.value} (the harness, planned by FakeExecutor)")
        with self._cond:
            return self._harnesses.setdefault(harness.cache_key, result)

    def _build(self, job: Job) -> BuildResult | Stopped:
        if job.is_harness:
            return self._harness_built(job)
        plan = self._plan(job)
        if job.harness is not None and _names_harness(job.build_argv):  # linked into each config
            harness = self._harness_built(job.harness)
            if isinstance(harness, Stopped):
                return STOPPED
            if harness.status is not Status.OK:
                return harness_failure(harness)
        if isinstance(plan.build, Stopped):
            return STOPPED
        if plan.build is not Status.OK:
            return failed_build(plan.build, plan.failure_message(plan.build), seconds=plan.build_seconds)
        return built(_binary(job), code=plan.code, seconds=plan.build_seconds, built_seconds=plan.build_seconds)

    def _run(self, job: Job) -> tuple[RunOutcome | Stopped, Path | None]:
        with self._cond:
            slot = len(self.runs) % self._slots
        model = self._models[slot % len(self._models)] if self._models is not None else self._runs_on
        gpu = Gpu(index=None if model == "none" else slot, name=model)
        harness_path = None
        if job.harness is not None and _names_harness(job.run_argv):
            harness = self._harness_built(job.harness)
            if isinstance(harness, Stopped):
                return STOPPED, None
            if harness.status is not Status.OK:
                status, message, _ = not_run(f"the harness did not build: {harness.message}")
                return RunOutcome(status, message, gpu=gpu), None
            harness_path = harness.binary
        plan = self._plan(job)
        if plan.run is None:
            raise ValueError(f"submit_run: {job.config_id} is planned not to build ({plan.build}), and was run")
        if isinstance(plan.run, Stopped):
            return STOPPED, harness_path
        message = "" if plan.run is Status.OK else plan.failure_message(plan.run)
        metrics = dict(plan.metrics) if plan.run is Status.OK else {}
        return RunOutcome(plan.run, message, metrics, RUN_SECONDS, gpu, gpu_state=dict(plan.gpu_state),
                          started=time.time()), harness_path

    # -- futures -----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("cannot submit to a FakeExecutor after shutdown")

    def _future(self, value) -> Future:
        fut: Future = Future()
        if self.completion == "immediate":
            fut.set_result(value)
            return fut
        with self._cond:
            self._held.append((fut, value))
            self.most_pending = max(self.most_pending, len(self._held))
            self._cond.notify_all()
        return fut

    def _complete_shuffled(self) -> None:
        while True:
            with self._cond:
                while not self._held and not self._closed:
                    self._cond.wait()
                if not self._held:
                    return
                self._cond.wait(SETTLE_SECONDS)  # let the driver submit what it submits together
                if not self._held:
                    continue
                fut, value = self._held.pop(self._rng.randrange(len(self._held)))
            _complete(fut, value)


def _complete(fut: Future, value) -> None:
    if fut.set_running_or_notify_cancel():  # False: the driver cancelled it
        fut.set_result(value)


def _binary(job: Job) -> Path:
    return Path("fake-builds") / job.build_cache_key / job.output


def _names_harness(argv: Sequence[str]) -> bool:
    return any("{harness}" in a for a in argv)
