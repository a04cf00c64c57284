"""Executors: where builds and runs happen. The sweep driver only sees futures.

``LocalExecutor`` builds on a pool of threads (each build is its own process) and runs
on one slot per GPU, each run pinned to its GPU with CUDA_VISIBLE_DEVICES. With several
GPUs, a start gate keeps the runs' process starts ``start_gap`` seconds apart (gate.py).
Jobs built for a persistent host run in one long-lived process per GPU (persistent.py).
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..build.builder import Builder, BuildResult
from ..job import Job
from ..process import kill_all
from ..status import STOPPED, Status, Stopped
from .classify import not_run
from .gate import StartGate, auto_gap
from .gpus import Gpu
from .persistent import PersistentHost, host_env
from .program import RunOutcome, run_job


class LocalExecutor:
    def __init__(self, builder: Builder, gpus: list[Gpu], scratch: Path, build_jobs: int | None = None,
                 start_gap: float | None = None):
        self.builder = builder
        self.start_gap = auto_gap(len(gpus)) if start_gap is None else start_gap
        self.gate = StartGate(self.start_gap) if self.start_gap > 0 else None
        self.gpus = gpus
        self.scratch = scratch
        self.build_jobs = build_jobs or os.cpu_count() or 1
        self._builds = ThreadPoolExecutor(self.build_jobs, thread_name_prefix="ksweep-build")
        self._runs = ThreadPoolExecutor(len(gpus), thread_name_prefix="ksweep-run")
        self._hosts: dict[int | None, PersistentHost] = {}
        self._hosts_lock = threading.Lock()
        self._free: queue.Queue[Gpu] = queue.Queue()
        for g in gpus:
            self._free.put(g)

    @property
    def run_slots(self) -> int:
        return len(self.gpus)

    @property
    def gpu_models(self) -> tuple[str, ...]:
        """The model of each GPU this executor runs on ("none" for a slot without a GPU)."""
        return tuple(g.name for g in self.gpus)

    def submit_build(self, job: Job) -> Future:
        return self._builds.submit(self.builder.build, job)

    def submit_run(self, job: Job, build: BuildResult) -> Future:
        return self._runs.submit(self._run, job, build)

    def _run(self, job: Job, build: BuildResult) -> RunOutcome:
        gpu = self._free.get()
        try:
            return self.run_on(gpu, job, build)
        finally:
            self._free.put(gpu)

    def run_on(self, gpu: Gpu, job: Job, build: BuildResult) -> RunOutcome | Stopped:
        """Run one built job on one GPU: the binary in its own process, or on the GPU's persistent host."""
        harness = None
        if job.harness is not None:  # built once (the builder keeps it): usually already there
            built = self.builder.build(job.harness)
            if isinstance(built, Stopped):
                return STOPPED
            if built.status is not Status.OK:
                return RunOutcome(*not_run(f"the harness did not build: {built.message}"), gpu=gpu)
            harness = built.binary
        if job.persistent:
            return self._host(gpu).run(job, build, gpu, self.scratch, harness)
        return run_job(job, build, gpu, self.scratch, self.gate, harness)

    def _host(self, gpu: Gpu) -> PersistentHost:
        with self._hosts_lock:
            if gpu.index not in self._hosts:
                self._hosts[gpu.index] = PersistentHost(host_env(gpu))
            return self._hosts[gpu.index]

    def shutdown(self, cancel: bool = False) -> None:
        if cancel:
            kill_all()
        self._builds.shutdown(wait=not cancel, cancel_futures=cancel)
        self._runs.shutdown(wait=not cancel, cancel_futures=cancel)
        with self._hosts_lock:
            hosts, self._hosts = list(self._hosts.values()), {}
        for host in hosts:
            host.close(kill=cancel)
