"""Kernel mode's executor: cubins built like any binary, runs on one persistent worker per GPU."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from ..build.builder import Builder, BuildResult
from ..job import Job
from ..status import Status
from ..process import ProcessRegistry
from ..run.executor import SlotExecutor
from ..run.gpu_state import NO_MONITOR, GpuMonitor, NvmlMonitor, watch
from ..run.gpus import Gpu
from ..run.program import RunOutcome
from ..run.classify import classify_answer, not_run
from ..run.handle import WorkerHandle
from .launch import entry_name
from .worker import ENERGY_EDGE_S
from ..spec.kernel import KernelSpec


# the runs that are timed in full whatever the best so far: the confirmation's, the default's
# (the speed-up's baseline), the reference config's and --cross's (export --robust weighs them)
MEASURED_IN_FULL = frozenset({"confirm", "default", "reference", "cross"})


def shape_sizes(spec, shape) -> dict:
    """What the argument, cmem and reference functions get as ``sizes`` for a shape."""
    return {**spec.constants, **shape.constants, **shape.defines}


def python_reference(kspec: KernelSpec) -> str | None:
    """``reference = "file.py:fn"`` (the worker computes the expected outputs), else None."""
    ref = kspec.reference
    return ref if isinstance(ref, str) and ref != "defaults" else None


def setup_request(kspec: KernelSpec, root: Path, sizes: dict, checked: bool = True) -> dict:
    """The worker's ``setup`` request: inputs, cmem values and, when ``checked`` (a sweep's
    worker, not one launch for a profiler), a Python reference's expected outputs and the
    energy observer's window when it is on."""
    return {
        "op": "setup", "args": kspec.args, "cmem": kspec.cmem, "root": str(root), "sizes": sizes,
        "seed": kspec.seed, "outputs": list(kspec.outputs), "reference": python_reference(kspec) if checked else None,
        "atol": kspec.atol, "rtol": kspec.rtol, "timing": kspec.timing.__dict__,
        "energy": {"duration_ms": kspec.timing.energy_ms} if checked and "energy" in kspec.observers else None,
    }


def eval_timeout(kspec: KernelSpec) -> float:
    """Seconds one evaluation may take: ``timeout``, plus the energy phase's window and the
    time its counter may take to change, when the energy observer is on."""
    if "energy" not in kspec.observers:
        return kspec.timeout
    return kspec.timeout + kspec.timing.energy_ms / 1e3 + ENERGY_EDGE_S


class KernelExecutor(SlotExecutor):
    """Kernel mode on this host's GPUs: one worker process per GPU (``backend``: "cuda", or
    ``fake:<module>``, a stand-in for tests) loads each cubin and times it; one worker per
    GPU, so no starts to space."""

    def __init__(self, builder: Builder, gpus: list[Gpu], scratch: Path, kspec: KernelSpec, root: Path,
                 sizes_by_shape: dict[str, dict], build_jobs: int | None = None, backend: str = "cuda",
                 registry: ProcessRegistry | None = None, monitor: GpuMonitor | None = None, race: bool = False):
        super().__init__(builder, gpus, scratch, build_jobs, registry)
        # NVML on a real GPU (not with a stand-in backend): clocks and throttling per config
        self.monitor = monitor if monitor is not None else (
            NvmlMonitor() if backend == "cuda" and any(g.index is not None for g in gpus) else NO_MONITOR)
        self.kspec = kspec
        self.root = root
        self.sizes_by_shape = sizes_by_shape
        self.backend = backend
        self._workers: dict[tuple, WorkerHandle] = {}
        self._lock = threading.Lock()
        self.python_reference = python_reference(kspec)
        # ``race`` (the objective is ms, min): a sweep's config slower than the best so far by
        # timing.race on every launch of a first short batch is timed no further (worker._time)
        self.race = race and kspec.timing.race > 0
        # (variant, shape, GPU model) -> the best ms of this executor's sweep runs: a config is
        # raced against its own variant's and GPU model's best only (a faster variant's or
        # model's would stop every config of a slower one)
        self._best_ms: dict[tuple[str, str, str], float] = {}
        # Start each GPU's worker now (CUDA init, inputs, reference) while the first cubins build.
        # On a run-pool thread: those live as long as the executor, and a worker dies with the
        # thread that started it (PR_SET_PDEATHSIG).
        first_shape = next(iter(sizes_by_shape), None)
        if first_shape is not None:
            for gpu in gpus:
                self._runs.submit(self._warm, gpu, first_shape)

    def _warm(self, gpu: Gpu, shape: str) -> None:
        self._worker(gpu, shape).request({"op": "ping"}, timeout=600)

    def reference_file(self, job: Job) -> Path:
        return self.scratch / f"reference-{job.variant}-{job.shape}.npz"

    def _worker(self, gpu: Gpu, shape: str) -> WorkerHandle:
        key = (gpu.index, shape)
        with self._lock:
            if key not in self._workers:
                env = {"CUDA_VISIBLE_DEVICES": str(gpu.index)} if gpu.index is not None else {}
                setup = setup_request(self.kspec, self.root, self.sizes_by_shape.get(shape, {}))
                for old_key in [k for k in self._workers if k[0] == gpu.index]:  # one worker per GPU
                    self._workers.pop(old_key).close()
                self._workers[key] = WorkerHandle(self.backend, env, setup)
            return self._workers[key]

    @property
    def runs_read_params(self) -> bool:
        """A stand-in backend plays each kernel from the config's parameters; a cubin on a GPU is the config."""
        return self.backend != "cuda"

    def run_on(self, gpu: Gpu, job: Job, build: BuildResult) -> RunOutcome:
        entry = entry_name([k.name for k in build.report.kernels], self.kspec)
        if entry is None:
            return RunOutcome(*not_run(f"no entry point for '{self.kspec.name}' in the cubin "
                                       f"(found: {', '.join(k.name for k in build.report.kernels) or 'none'})"),
                              gpu=gpu)
        ref = self.reference_file(job)
        req = {
            "op": "eval", "cubin": str(build.binary), "entry": entry, "params": dict(job.params),
            **{k: job.launch[k] for k in ("grid", "block", "smem")},
            "capture": str(ref) if job.is_reference and self.python_reference is None else None,
            "reference_file": str(ref) if self.python_reference is None else None,
        }
        if job.phase == "confirm":  # the confirmation compares its runs' outputs (verify/determinism.py)
            req["digest"] = True
        raced = self.race and job.phase not in MEASURED_IN_FULL
        bar_key = (job.variant, job.shape, gpu.name)
        with self._lock:
            req["bar_ms"] = self._best_ms.get(bar_key) if raced else None
        worker = self._worker(gpu, job.shape)
        t0, started = time.monotonic(), time.time()
        timeout = eval_timeout(self.kspec)
        with watch(self.monitor, gpu.index) as watched:  # the GPU's clocks and throttling meanwhile
            answer = worker.request(req, timeout=timeout)
        status, message, metrics, checked = classify_answer(answer, timeout)
        ms = metrics.get("ms")
        if raced and status is Status.OK and ms is not None and ms > 0:  # a raced one is behind: no new best
            with self._lock:
                self._best_ms[bar_key] = min(ms, self._best_ms.get(bar_key, ms))
        notes = tuple(n for n in (worker.setup_answer.get("audit"), answer.data.get("audit")) if n)
        return RunOutcome(status, message, metrics, time.monotonic() - t0, gpu, outputs_checked=checked,
                          gpu_state=watched.state, started=started, notes=notes)

    def shutdown(self, cancel: bool = False) -> None:
        for w in list(self._workers.values()):
            w.close() if not cancel else w.kill()
        super().shutdown(cancel)
