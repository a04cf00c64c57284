"""Program mode: run a built binary for one config in its own working directory."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..build.builder import BuildResult
from ..job import Job
from ..process import ProcessRegistry, run_process
from ..status import STOPPED, Status, Stopped
from .classify import classify
from .gate import StartGate
from .gpus import Gpu


@dataclass(frozen=True)
class RunOutcome:
    """A finished run, judged by run/classify.py (a run Ctrl-C came first to is ``Stopped`` instead)."""

    status: Status
    message: str
    metrics: dict = field(default_factory=dict)
    seconds: float = 0.0
    gpu: Gpu | None = None
    outputs_checked: bool = False  # kernel mode: the run compared its outputs with the reference's itself
    gpu_state: dict = field(default_factory=dict)  # the GPU during the run (run/gpu_state.py)
    started: float | None = None  # when the run began (wall clock, time.time()); None when it did not begin
    notes: tuple[str, ...] = ()  # what the user should know beyond this run (kernel mode: a blind check)


def run_argv(job: Job, build: BuildResult, workdir: Path, harness: Path | None) -> list[str]:
    """The run command of a built job, its placeholders filled (pure)."""
    fill = {"{binary}": str(build.binary) if build.binary else "", "{workdir}": str(workdir),
            "{harness}": str(harness) if harness is not None else ""}
    out = []
    for arg in job.run_argv:
        for name, value in fill.items():
            arg = arg.replace(name, value)
        out.append(arg)
    return out


def run_job(job: Job, build: BuildResult, gpu: Gpu, scratch_root: Path, gate: StartGate | None = None,
            harness: Path | None = None, registry: ProcessRegistry | None = None) -> RunOutcome | Stopped:
    """Run the binary in a fresh working directory; ``gate`` spaces the starts on this host;
    ``harness``: the built harness of the job's shape × variant, if it has one; ``registry``:
    the owner of the run's process."""
    scratch_root.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="run-", dir=scratch_root))
    try:
        argv = run_argv(job, build, workdir, harness)
        env = dict(job.run_env)
        if gpu.index is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu.index)
        if gate is not None:
            gate.wait()
        started = time.time()
        out = run_process(argv, cwd=workdir, timeout=job.run_timeout, env=env, output_limit=job.output_limit,
                          registry=registry, leftovers=True)
        if out.stopped:
            return STOPPED
        status, message, metrics = classify(out, job.run_timeout, job.shape)
        return RunOutcome(status, message, metrics, out.seconds, gpu, started=started)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
