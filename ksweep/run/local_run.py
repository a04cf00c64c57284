"""Run one built job on one GPU of this machine: the one place that does it, for the
local executor's GPU slots and for a Dask worker's GPU alike."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..build.builder import BuildResult
from ..job import Job
from ..process import ProcessRegistry
from ..status import STOPPED, Status, Stopped
from .classify import not_run
from .gate import StartGate
from .gpu_state import NO_MONITOR, GpuMonitor, watch
from .gpus import Gpu
from .persistent import PersistentHost
from .program import RunOutcome, run_job


def run_built(job: Job, build: BuildResult, gpu: Gpu, scratch: Path, *, gate: StartGate | None = None,
              harness: BuildResult | Stopped | None = None, host: PersistentHost | None = None,
              registry: ProcessRegistry | None = None, monitor: GpuMonitor = NO_MONITOR,
              monitor_index: int | None = None) -> RunOutcome | Stopped:
    """Run ``job`` (built: ``build``) on ``gpu``, in a fresh folder under ``scratch``.

    ``harness``: the built harness of the job's shape × variant (its binary at a path this
    machine reads), handed to the run as ``{harness}``; None when the job has none. One that
    did not build makes the run a RUN_ERROR outcome. ``host``: the GPU's persistent host, for
    a job built for one (``job.persistent``); else the run is a process of its own, started
    through ``gate`` (starts spaced on this host) and registered with ``registry``.
    ``monitor`` watches GPU ``monitor_index`` (default ``gpu.index``) during the run: its
    clocks, temperature, power and throttling go with the outcome (run/gpu_state.py)."""
    index = gpu.index if monitor_index is None else monitor_index
    with watch(monitor, index) as watched:
        outcome = _run_built(job, build, gpu, scratch, gate, harness, host, registry)
    if isinstance(outcome, Stopped) or not watched.state:
        return outcome
    return replace(outcome, gpu_state=watched.state)


def _run_built(job, build, gpu, scratch, gate, harness, host, registry) -> RunOutcome | Stopped:
    harness_path = None
    if harness is not None:
        if isinstance(harness, Stopped):
            return STOPPED
        if harness.status is not Status.OK:
            return RunOutcome(*not_run(f"the harness did not build: {harness.message}"), gpu=gpu)
        harness_path = harness.binary
    if job.persistent:
        if host is None:
            raise ValueError(f"ksweep bug: {job.label or job.shape} is built for a persistent host, and none was given")
        return host.run(job, build, gpu, scratch, harness_path, registry=registry)
    return run_job(job, build, gpu, scratch, gate, harness_path, registry)
