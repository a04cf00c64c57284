"""One config of one build of the sources, measured a run at a time: a side of ``ksweep
check``'s interleaved rounds (the current sources, or a baseline revision rebuilt).

``ksweep check`` measures two builds of one config in turn, round after round, and decides
after each round whether to go on (``app/check_rounds.py``); a sweep's confirmation measures
the configs of one build (``confirmation.py``). Each run here is built through the
executor's cache and judged as a sweep judges it (``record.judged``: a run that ended OK
with the objective measured and the check passed), without the reference config's metrics
(the check's first run of the current config, a sweep's, had them).
"""

from __future__ import annotations

import time

from ..build.builder import BuildResult
from ..errors import EnvironmentProblem
from ..gpu import physics
from ..job import Job
from ..result import Measurement
from ..run.base import Executor
from ..run.environment import run_problem
from ..spec.model import Spec
from ..status import Status, Stopped
from .record import judged
from .waiting import wait_for


class Contender:
    """``job`` (a config of ``spec``), built and run on ``executor``."""

    def __init__(self, spec: Spec, executor: Executor, job: Job):
        self.spec, self.executor, self.job = spec, executor, job
        self._build: BuildResult | None = None

    def build(self) -> str | None:
        """Build the config (and its harness first, when it has one): None, or why it did not build."""
        for job in ((self.job.harness,) if self.job.harness is not None else ()) + (self.job,):
            built = wait_for(self.executor.submit_build(job))
            if isinstance(built, Stopped):
                raise KeyboardInterrupt
            if built.status is not Status.OK:
                what = "its harness" if job.is_harness else "it"
                return f"{what} did not build ({built.status.value}): {built.message}".rstrip(": ")
            if not job.is_harness:
                self._build = built
        return None

    def run(self, round_: int) -> Measurement:
        """Run the built config once and judge the run: a measurement of round ``round_``."""
        job = self.job
        if self._build is None:
            problem = self.build()
            if problem is not None:
                return Measurement(job.variant, job.shape, dict(job.params), job.cache_key, round_,
                                   Status.COMPILE_ERROR, message=problem, finished=time.time())
        outcome = wait_for(self.executor.submit_run(job, self._build))
        if isinstance(outcome, Stopped):
            raise KeyboardInterrupt
        problem = run_problem(outcome)  # the host's, not the config's (no GPU, a driver gone): as a sweep, stop
        if problem:
            raise EnvironmentProblem(f"{self.spec.label}: {problem}")
        metrics = physics.with_efficiency(outcome.metrics, job.work)
        status, message, _ = judged(self.spec, job, outcome, metrics, None)
        value = metrics.get(self.spec.objective.metric) if status is Status.OK else None
        gpu = outcome.gpu
        return Measurement(job.variant, job.shape, dict(job.params), job.cache_key, round_, status,
                           value=float(value) if value is not None else None, message=message, metrics=metrics,
                           gpu_name=gpu.name if gpu else None, gpu_uuid=gpu.uuid if gpu else None,
                           gpu_state=dict(outcome.gpu_state), finished=time.time())
