"""Program mode on a persistent host: one long-lived process per GPU runs every config
(host.py), so a run costs the program's own work, not a process and a CUDA context.

A run's outcome is classified exactly as a process's would be: the host's answer is made
into a ``ProcessOutcome`` (``host_outcome``): its exit code (main's return value, or the
code of an ``exit()`` that ended the host), the signal that killed the host, a timeout, and
its stdout/stderr, captured to files and capped the same way.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping

from ..build.builder import BuildResult
from ..job import Job
from ..process import DEFAULT_REGISTRY, FifoCapture, ProcessOutcome, ProcessRegistry
from ..status import STOPPED, Stopped
from .classify import classify, not_run
from .gpus import Gpu
from .handle import Answer, WorkerHandle
from .program import RunOutcome, run_argv

RUNS_PER_HOST = 200  # a fresh host after this many runs: what programs leak does not pile up


class PersistentHost:
    """One GPU's host process (started on the first run, restarted after a failure).
    ``registry``: the owner (an executor) whose kill_all kills the host while it runs a config."""

    def __init__(self, env: Mapping[str, str] | None = None, runs_per_host: int = RUNS_PER_HOST,
                 registry: ProcessRegistry | None = None):
        self.registry = registry or DEFAULT_REGISTRY
        self.base_env = dict(env or {})
        self.handle = WorkerHandle(env=env, argv=[sys.executable, "-m", "ksweep.run.host"], start_timeout=120.0)
        self.runs_per_host = runs_per_host
        self._runs = 0

    def run(self, job: Job, build: BuildResult, gpu: Gpu | None, scratch_root: Path,
            harness: Path | None = None, registry: ProcessRegistry | None = None) -> RunOutcome | Stopped:
        """Run one config on this host: the library the run command starts with (the config's
        build, or the harness) is loaded and its main called with the command's arguments.
        ``registry``: whose kill_all kills the host during this run (default the host's own;
        a Dask worker's host serves several sweeps, each with its own)."""
        registry = registry or self.registry
        scratch_root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="run-", dir=scratch_root))
        logs = Path(tempfile.mkdtemp(prefix="out-", dir=scratch_root))  # not in the program's own folder
        try:
            argv = run_argv(job, build, workdir, harness)
            programs = {str(p) for p in (build.binary, harness) if p is not None}
            if not argv or argv[0] not in programs:
                return RunOutcome(*not_run("a persistent host runs the built library itself: "
                                           "[run] command must start with {binary} (or {harness})"), gpu=gpu)
            if registry.stopping():
                return STOPPED
            # the program's stdout and stderr are pipes drained here, capped as in a process per run
            captures = []
            for name in ("stdout", "stderr"):
                os.mkfifo(logs / name)
                captures.append(FifoCapture(logs / name, job.output_limit))
                captures[-1].start()
            request = {"op": "run", "lib": argv[0], "argv": argv, "cwd": str(workdir), "env": dict(job.run_env),
                       "stdout": str(logs / "stdout"), "stderr": str(logs / "stderr")}
            started = time.time()
            try:
                # [run] env is the host's environment too: what is read at start-up (LD_PRELOAD,
                # CUDA_* settings of the driver) must be there before the host starts
                answer, elapsed = self._ask(request, job.run_timeout, {**self.base_env, **job.run_env}, registry)
            finally:
                for capture in captures:
                    capture.finish()
            outcome, context_error = host_outcome(answer, elapsed, *captures)
            status, message, metrics = classify(outcome, job.run_timeout, job.shape, context_error)
            return RunOutcome(status, message, metrics, outcome.seconds, gpu, started=started)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            shutil.rmtree(logs, ignore_errors=True)

    def _ask(self, request: dict, timeout: float, env: dict[str, str],
             registry: ProcessRegistry) -> tuple[Answer, float]:
        """The host's answer to one request and the seconds it took; the host is started first
        if needed, and killed after a timeout, its death or a broken context."""
        h = self.handle
        with h.lock:
            if h.alive() and (self._runs >= self.runs_per_host or h.env != env):
                h.close()
            h.env = env
            if not h.alive():
                self._runs = 0
                failure = h.start()
                if failure is not None:
                    return failure, 0.0
            self._runs += 1
            pgid = h.proc.pid
            registry.track(pgid)
            start = time.monotonic()
            try:
                answer = h.ask(request, timeout)
            finally:
                registry.untrack(pgid)
            elapsed = time.monotonic() - start
            if not answer.replied or answer.data.get("fatal"):  # hung, dead (exit(), a crash) or broken
                h.kill()  # and whatever the program left running in the host's group
            elif answer.data.get("sticky"):  # the program stayed loaded: the next run needs fresh statics
                self._runs = self.runs_per_host
            return answer, elapsed

    def close(self, kill: bool = False) -> None:
        if kill:
            self.handle.kill()
        else:
            self.handle.close()


def host_outcome(answer: Answer, elapsed: float, out: FifoCapture,
                 err: FifoCapture) -> tuple[ProcessOutcome, str | None]:
    """A run on a host as the process it stands for, and what broke the CUDA context when the
    host found it broken after the program ended (None if it did not).

    A host that did not start is a command that could not be started; a timeout is a
    timeout; a host that died (``exit()`` in the program, a crash, a kill) ended as that
    process would have; an answer gives main's return value and the program's own seconds."""
    if answer.kind == "no_start":
        return ProcessOutcome(None, False, "", "", False, 0.0,
                              error=f"the persistent host did not start: {answer.detail}"), None
    output = (out.text(), err.text(), out.truncated or err.truncated)
    if answer.kind == "timeout":
        return ProcessOutcome(None, True, *output, elapsed), None
    if answer.kind == "dead":
        return ProcessOutcome(answer.returncode, False, *output, elapsed), None
    reply = answer.data
    broken = (reply.get("message") or None) if reply.get("fatal") else None
    return ProcessOutcome(reply["rc"], False, *output, reply.get("seconds", elapsed)), broken


def host_env(gpu: Gpu | None, pin: str | None = None) -> dict[str, str]:
    """The environment of a GPU's host: pinned to its device like a program-mode run."""
    device = pin if pin is not None else (str(gpu.index) if gpu is not None and gpu.index is not None else None)
    return {"CUDA_VISIBLE_DEVICES": device} if device is not None else {}
