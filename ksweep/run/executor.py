"""Executors of this host: builds on a pool of threads, runs on one slot per GPU.

``SlotExecutor`` holds what the local executors share: each build is its own process on a
thread of the build pool; each run takes a free GPU slot and runs there (``run_on``).
``LocalExecutor`` runs program mode: each run pinned to its GPU with CUDA_VISIBLE_DEVICES,
in a process of its own or on the GPU's persistent host (persistent.py). With several
GPUs, a start gate keeps the runs' process starts ``start_gap`` seconds apart (gate.py).
Kernel mode's executor (kernel/executor.py) is a ``SlotExecutor`` too.
"""

from __future__ import annotations

import abc
import os
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..build.builder import Builder, BuildResult
from ..job import Job
from ..process import ProcessRegistry
from ..status import Stopped
from .base import Executor, Here
from .gate import StartGate, auto_gap
from .gpu_state import NO_MONITOR, GpuMonitor, NvmlMonitor
from .gpus import Gpu
from .local_run import run_built
from .persistent import PersistentHost, host_env
from .program import RunOutcome


class SlotExecutor(Executor):
    """Builds through ``builder`` on ``build_jobs`` threads; runs on one slot per GPU of
    ``gpus`` (a ``Gpu`` with index None: a slot without a GPU). Every process it starts is
    registered with ``registry`` (its own by default), which ``shutdown(cancel=True)``
    kills. Subclasses say how a built job runs on a GPU (``run_on``)."""

    def __init__(self, builder: Builder, gpus: list[Gpu], scratch: Path, build_jobs: int | None = None,
                 registry: ProcessRegistry | None = None):
        if not gpus:
            raise ValueError("an executor needs at least one GPU slot (Gpu(index=None) for none)")
        self.builder = builder
        self.gpus = gpus
        self.scratch = scratch
        self.registry = registry if registry is not None else ProcessRegistry()
        self._build_jobs = build_jobs or os.cpu_count() or 1
        self._builds = ThreadPoolExecutor(self._build_jobs, thread_name_prefix="ksweep-build")
        self._runs = ThreadPoolExecutor(len(gpus), thread_name_prefix="ksweep-run")
        self._free: queue.Queue[Gpu] = queue.Queue()
        for g in gpus:
            self._free.put(g)

    @property
    def run_slots(self) -> int:
        return len(self.gpus)

    @property
    def build_jobs(self) -> int:
        return self._build_jobs

    @property
    def gpu_models(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.gpus)

    @property
    def here(self) -> Here:
        first = self.gpus[0].index
        others = dict.fromkeys(g.index for g in self.gpus[1:] if g.index != first)  # --gpus 0,0: one GPU
        return Here(first, self.registry, self.scratch, tuple(others))

    def submit_build(self, job: Job) -> Future:
        return self._builds.submit(self.builder.build, job, self.registry)

    def submit_run(self, job: Job, build: BuildResult) -> Future:
        return self._runs.submit(self._run, job, build)

    def _run(self, job: Job, build: BuildResult) -> RunOutcome | Stopped:
        gpu = self._free.get()
        try:
            return self.run_on(gpu, job, build)
        finally:
            self._free.put(gpu)

    @abc.abstractmethod
    def run_on(self, gpu: Gpu, job: Job, build: BuildResult) -> RunOutcome | Stopped:
        """Run one built job on one GPU (on a thread of the run pool, which holds that GPU)."""

    def shutdown(self, cancel: bool = False) -> None:
        if cancel:
            self.registry.kill_all()
        self._builds.shutdown(wait=not cancel, cancel_futures=cancel)
        self._runs.shutdown(wait=not cancel, cancel_futures=cancel)


class LocalExecutor(SlotExecutor):
    """Program mode on this host's GPUs: each run a process of its own (starts spaced by
    ``start_gap``: None, automatic), or on its GPU's persistent host."""

    def __init__(self, builder: Builder, gpus: list[Gpu], scratch: Path, build_jobs: int | None = None,
                 start_gap: float | None = None, registry: ProcessRegistry | None = None,
                 monitor: GpuMonitor | None = None):
        super().__init__(builder, gpus, scratch, build_jobs, registry)
        self.start_gap = auto_gap(len(gpus)) if start_gap is None else start_gap
        self.gate = StartGate(self.start_gap) if self.start_gap > 0 else None
        self._hosts: dict[int | None, PersistentHost] = {}
        self._hosts_lock = threading.Lock()
        # NVML on a host with GPUs (clocks and throttling per run), nothing otherwise
        self.monitor = monitor if monitor is not None else (
            NvmlMonitor() if any(g.index is not None for g in gpus) else NO_MONITOR)

    def run_on(self, gpu: Gpu, job: Job, build: BuildResult) -> RunOutcome | Stopped:
        """Run one built job on one GPU: the binary in its own process, or on the GPU's persistent host."""
        # the harness is built once (the builder keeps it): usually already there
        harness = self.builder.build(job.harness, self.registry) if job.harness is not None else None
        host = self._host(gpu) if job.persistent else None
        return run_built(job, build, gpu, self.scratch, gate=self.gate, harness=harness, host=host,
                         registry=self.registry, monitor=self.monitor)

    def _host(self, gpu: Gpu) -> PersistentHost:
        with self._hosts_lock:
            if gpu.index not in self._hosts:
                self._hosts[gpu.index] = PersistentHost(host_env(gpu), registry=self.registry)
            return self._hosts[gpu.index]

    def shutdown(self, cancel: bool = False) -> None:
        super().shutdown(cancel)
        with self._hosts_lock:
            hosts, self._hosts = list(self._hosts.values()), {}
        for host in hosts:
            host.close(kill=cancel)
