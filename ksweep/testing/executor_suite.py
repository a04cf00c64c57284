"""The conformance tests every executor passes (the contract of run/base.py).

Subclass ``ExecutorSuite`` in a test module and give it two fixtures: ``executor``, a fresh
executor for each test (shut down after it), and ``case``, an ``ExecutorCase``: jobs that
executor can build and run, and what they should give::

    from ksweep.testing.executor_suite import ExecutorCase, ExecutorSuite

    class TestMyExecutor(ExecutorSuite):
        @pytest.fixture
        def executor(self):
            with MyExecutor(...) as ex:
                yield ex

        @pytest.fixture
        def case(self):
            return ExecutorCase(good=..., bad_build=..., bad_run=...)

Jobs come from a spec (``ksweep.sweep.jobs.JobFactory``); the optional parts of a case
(a harness, a hang) are skipped when absent.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Mapping

import pytest

from ..build.builder import BuildResult
from ..job import Job
from ..process import pid_alive
from ..run.base import Executor
from ..run.program import RunOutcome
from ..status import Status, Stopped

PATIENCE = 300.0  # seconds a future may take before the suite calls the executor stuck (never a timing check)


@dataclass(frozen=True)
class ExecutorCase:
    """Jobs for the suite, and what they give.

    ``good`` builds and runs OK, its metrics holding ``metric``. ``bad_build`` does not build
    (a build failure status). ``bad_run`` builds, and its run fails. ``many``: jobs that build
    and run OK, each with metrics its outcome must hold (they are submitted together).
    ``harness``: a job whose run command names ``{harness}``, OK with ``harness_metrics``
    among its metrics; ``broken_harness``: one whose harness does not build. ``hang``: a job
    whose run never ends, and ``hang_pids``: the pids of its program once it runs."""

    good: Job
    bad_build: Job
    bad_run: Job
    metric: str = "ms"
    many: tuple[tuple[Job, Mapping[str, float]], ...] = ()
    harness: Job | None = None
    harness_metrics: Mapping[str, float] = field(default_factory=dict)
    broken_harness: Job | None = None
    hang: Job | None = None
    hang_pids: Callable[[], set[int]] | None = None


def result(fut: Future):
    """The value of a future the executor must complete (waited for in steps)."""
    assert isinstance(fut, Future), f"an executor hands out concurrent.futures.Future, not {type(fut).__name__}"
    return fut.result(timeout=PATIENCE)


def build(executor: Executor, job: Job) -> BuildResult:
    """Build ``job`` as the driver does: its harness first, when it has one."""
    if job.harness is not None:
        result(executor.submit_build(job.harness))
    built = result(executor.submit_build(job))
    assert isinstance(built, BuildResult), f"{job.label}: a build's value is a BuildResult, not {built!r}"
    return built


def build_and_run(executor: Executor, job: Job) -> tuple[BuildResult, RunOutcome]:
    built = build(executor, job)
    assert built.status is Status.OK, f"{job.label} did not build: {built.status} {built.message}\n{built.log}"
    outcome = result(executor.submit_run(job, built))
    assert isinstance(outcome, RunOutcome), f"{job.label}: a run's value is a RunOutcome, not {outcome!r}"
    return built, outcome




def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


class ExecutorSuite:
    """The executor contract: futures whose values are results (failures included), at least
    one run slot, the harness handed to runs, shutdown idempotent, and cancel killing what
    the executor started."""

    @pytest.fixture
    def executor(self) -> Executor:
        raise NotImplementedError("give the suite an executor fixture: a fresh executor, shut down after the test")

    @pytest.fixture
    def case(self) -> ExecutorCase:
        raise NotImplementedError("give the suite a case fixture: an ExecutorCase of jobs this executor runs")

    def test_is_an_executor_with_slots_and_gpu_models(self, executor):
        assert isinstance(executor, Executor)
        assert isinstance(executor.run_slots, int) and executor.run_slots >= 1
        assert isinstance(executor.build_jobs, int) and executor.build_jobs >= 1
        models = executor.gpu_models
        assert models is None or (isinstance(models, tuple) and models and all(isinstance(m, str) for m in models))

    def test_a_good_job_builds_and_runs(self, executor, case):
        before = time.time()
        built, outcome = build_and_run(executor, case.good)
        assert outcome.status is Status.OK, f"{outcome.status}: {outcome.message}"
        # when the run began, on the wall clock (stored as the result's ``started``)
        assert outcome.started is not None and before <= outcome.started <= time.time()
        assert case.metric in outcome.metrics
        assert outcome.gpu is not None
        if executor.gpu_models is not None:
            assert outcome.gpu.name in executor.gpu_models

    def test_a_build_that_fails_is_a_result(self, executor, case):
        built = build(executor, case.bad_build)
        assert built.status.build_failure and built.message

    def test_a_run_that_fails_is_a_result(self, executor, case):
        _, outcome = build_and_run(executor, case.bad_run)
        assert outcome.status.is_failure and outcome.status is not Status.PRUNED and outcome.message

    def test_jobs_in_flight_together_each_get_their_own_result(self, executor, case):
        if not case.many:
            pytest.skip("this case has no jobs to run together")
        jobs = [job for job, _ in case.many]
        for harness in {j.harness.cache_key: j.harness for j in jobs if j.harness is not None}.values():
            result(executor.submit_build(harness))
        builds = [executor.submit_build(job) for job in jobs]
        runs = []
        for job, fut in zip(jobs, builds, strict=True):
            built = result(fut)
            assert built.status is Status.OK, f"{job.label}: {built.status} {built.message}"
            runs.append(executor.submit_run(job, built))
        for (job, expected), fut in zip(case.many, runs, strict=True):
            outcome = result(fut)
            assert outcome.status is Status.OK, f"{job.label}: {outcome.status} {outcome.message}"
            assert case.metric in outcome.metrics, job.label
            for key, value in expected.items():
                assert outcome.metrics.get(key) == pytest.approx(value), f"{job.label}: {key}"

    def test_the_harness_is_handed_to_runs(self, executor, case):
        if case.harness is None:
            pytest.skip("this case has no harness")
        _, outcome = build_and_run(executor, case.harness)
        assert outcome.status is Status.OK, f"{outcome.status}: {outcome.message}"
        for key, value in case.harness_metrics.items():
            assert outcome.metrics.get(key) == pytest.approx(value), key

    def test_a_harness_that_does_not_build_is_a_result(self, executor, case):
        job = case.broken_harness
        if job is None:
            pytest.skip("this case has no broken harness")
        harness = result(executor.submit_build(job.harness))
        assert isinstance(harness, BuildResult) and harness.status.build_failure
        built = result(executor.submit_build(job))
        assert isinstance(built, BuildResult)
        if built.status is Status.OK:  # the harness is not linked in: the run says it is missing
            outcome = result(executor.submit_run(job, built))
            assert isinstance(outcome, RunOutcome) and outcome.status is Status.RUN_ERROR
            assert "harness" in outcome.message

    def test_shutdown_twice_and_then_cancel_does_not_raise(self, executor, case):
        build_and_run(executor, case.good)
        executor.shutdown()
        executor.shutdown()
        executor.shutdown(cancel=True)
        executor.shutdown(cancel=True)

    def test_a_build_or_run_submitted_after_shutdown_raises(self, executor, case):
        built = build(executor, case.good)
        executor.shutdown()
        with pytest.raises(RuntimeError):
            executor.submit_build(case.good)
        with pytest.raises(RuntimeError):
            executor.submit_run(case.good, built)

    def test_shutdown_cancel_kills_what_it_started(self, executor, case):
        if case.hang is None or case.hang_pids is None:
            pytest.skip("this case has no hanging job")
        built = build(executor, case.hang)
        assert built.status is Status.OK, f"{built.status}: {built.message}"
        fut = executor.submit_run(case.hang, built)
        _wait_for(lambda: bool(case.hang_pids()), "the hanging program never started")
        pids = case.hang_pids()
        executor.shutdown(cancel=True)
        _wait_for(lambda: not any(pid_alive(p) for p in pids), f"shutdown(cancel=True) left {pids} running")
        _wait_for(fut.done, "a run's future was left pending after shutdown(cancel=True)")
        if not fut.cancelled() and fut.exception() is None:
            assert isinstance(fut.result(), (RunOutcome, Stopped))
