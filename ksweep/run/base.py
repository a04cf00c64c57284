"""The executor contract: where builds and runs happen, behind two futures.

Every executor (``LocalExecutor``, kernel mode's ``KernelExecutor``, ``DaskExecutor``,
``ksweep.testing.FakeExecutor``) implements ``Executor``; ``ksweep.testing.executor_suite``
checks one against this contract.
"""

from __future__ import annotations

import abc
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..build.builder import BuildResult
    from ..job import Job
    from ..process import ProcessRegistry
    from ..status import Stopped
    from .program import RunOutcome


@dataclass(frozen=True)
class Here:
    """Where a process ksweep starts beside an executor's runs (the hardening's sanitizers) may
    run: on this host, on the runs' first GPU (or, several at once, on each of ``gpus``)."""

    gpu: int | None  # that GPU's index (None: the runs have no GPU)
    registry: "ProcessRegistry | None"  # what Ctrl-C (``shutdown(cancel=True)``) kills
    scratch: Path  # a folder for its working folders
    others: tuple[int, ...] = ()  # the host's other GPUs the runs use

    @property
    def gpus(self) -> tuple[int | None, ...]:
        """Every GPU of this host the runs use, the first first."""
        return (self.gpu, *self.others)


class Executor(abc.ABC):
    """Builds jobs and runs built jobs on GPUs, handing the sweep driver futures.

    **Threads.** The driver calls every method and reads every attribute from its main
    thread, one call at a time. An executor does its work elsewhere (threads, processes,
    a cluster) and completes the futures from there; the driver only waits on them
    (``concurrent.futures.wait``) and reads ``result()`` once they are done.

    **Failures are values.** A future's value is the build's result or the run's
    outcome, whatever the program did: a compile error, a register limit, a hang, a
    crash, a CUDA error, a program that cannot start, a worker that died are all
    results with a status and a message (the driver judges, stores and tells them). A
    future raises only for a bug of ksweep or of the executor; the driver then stops.

    **Stopped.** Once the executor is stopping (Ctrl-C: ``shutdown(cancel=True)``), a
    build or run that has not started its program does not start it: its value is a
    *stopped outcome* (Ctrl-C came first). The driver never stores, judges or tells a
    stopped outcome; on one it stops the sweep.

    **The harness.** A job of a shape × variant with a harness (``job.harness``, from
    ``[build.harness]``) is built through ``submit_build`` like any job (the driver
    submits it before its configs' builds); the builder builds a harness once for all the
    configs that need it, and a config build that links it gets it from there. An executor
    hands the built harness's path to every run whose command names it, as ``{harness}``
    (``run/program.run_argv`` fills it); a harness that did not build makes such a run a
    ``RUN_ERROR`` outcome, never an exception.

    **Shutdown.** ``shutdown()`` frees everything the executor holds (threads, worker
    processes, a cluster it made); the driver calls it once nothing is in flight. What still
    is, a local executor waits for; a cluster's answers at once as cancelled (``result()``
    raises ``CancelledError``), since its tasks' keys may be gone from the scheduler once its
    client lets go of them. A build or run submitted after shutdown raises ``RuntimeError``.
    ``shutdown(cancel=True)``
    (Ctrl-C, an error) cancels what has not started and kills every process the executor
    started, at any depth, before it returns; the futures still pending are cancelled or
    end with any value, which the driver no longer reads. Calling ``shutdown`` again, with
    or without ``cancel``, is harmless: it never raises. Used as a context manager, an
    executor is shut down when the block ends (with ``cancel`` when the block raised).
    """

    @abc.abstractmethod
    def submit_build(self, job: Job) -> Future[BuildResult | Stopped]:
        """Start building ``job`` (a config, or a harness: ``job.is_harness``); a job with no
        build command is an ``OK`` build with no binary."""

    @abc.abstractmethod
    def submit_run(self, job: Job, build: BuildResult) -> Future[RunOutcome | Stopped]:
        """Start running ``job`` once built (``build``: its ``OK`` result from ``submit_build``)
        on one of the executor's GPUs; the outcome names the GPU it ran on."""

    @property
    @abc.abstractmethod
    def run_slots(self) -> int:
        """How many runs may be in flight at once (the GPUs), at least 1. It may change while
        a sweep runs (workers joining a cluster); the driver reads it as it goes."""

    @property
    @abc.abstractmethod
    def build_jobs(self) -> int:
        """How many builds run at once, at least 1 (the driver asks this far ahead)."""

    @property
    def gpu_models(self) -> tuple[str, ...] | None:
        """The model of each GPU the runs go to (``"none"`` for a slot without a GPU), or
        None when unknown before the runs (a remote cluster). A stored result of another
        model is run again; a sweep on ``("none", ...)`` reports no GPU figures."""
        return None

    @property
    def here(self) -> Here | None:
        """This host's GPU, when the runs go to it (the hardening's compute-sanitizer runs
        there too); None when they go elsewhere (a cluster's workers) or nowhere real (a
        table of answers)."""
        return None

    @property
    def runs_read_params(self) -> bool:
        """Whether a run's outcome depends on the config's parameters themselves, beyond the
        program its build made and its run command (a stand-in backend that plays a kernel from
        them). False: configs whose builds are one program, run alike, are measured once."""
        return False

    @abc.abstractmethod
    def shutdown(self, cancel: bool = False) -> None:
        """Free the executor: wait for what is in flight, or with ``cancel`` kill it (see the
        class's docstring). Idempotent."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.shutdown(cancel=exc_type is not None)
