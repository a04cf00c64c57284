"""The Dask executor: builds and runs as tasks of a ``distributed`` cluster.

It implements the executor contract (run/base.py) and hands the driver
``concurrent.futures`` futures, so the sweep loop, and with it the SQLite store, stay in
the client process. Which GPU models the workers have is not known before their runs
(``gpu_models`` is None). On a worker, a run goes through ``run_built`` as on this host.

* **Builds** are tasks any worker may take; they prefer workers without a ``GPU``
  resource (a loose restriction), so a GPU worker is not kept from its runs by nvcc.
  The worker builds through a ``Builder`` whose cache is its own local directory, or a
  *shared cache* (a path every worker sees) when one is configured.
* **Binaries** travel inside the task graph: a build task returns the ``BuildResult``
  with the binary's bytes (only the small ``BuildResult`` is fetched to the client) and
  the run task takes the build task's future as an argument, so Dask moves the bytes
  from the build worker to the run worker. With a shared cache nothing is shipped: the
  run reads the binary at the cache path.
* **A harness** (``[build.harness]``) is one build task per shape × variant; its future is
  an argument of every run task, so each run worker receives it once and keeps it on its
  disk by cache key.
* **Runs** need resource ``GPU=1``; a GPU worker's GPU is the (first) device of the
  ``CUDA_VISIBLE_DEVICES`` it was started with, and every program it runs sees that one.
  The worker names its GPU from ``nvidia-smi`` (or ``KSWEEP_GPU_NAME`` where there is
  none, e.g. the fake GPUs of tests).
* **Starts are spaced** on each host that has several GPU workers: the runs pass the
  host's start gate (gate.py), a file lock every worker process of the host shares.
* **A dead worker** (killed, out of memory, node lost) does not lose its task: the
  scheduler hands it to another worker, up to ``allowed-failures`` times per task. A
  config that keeps killing its workers becomes a CRASH result instead of stopping the
  sweep. ``retries`` re-runs a task that raised (the programs' own failures never raise:
  they are results).
* **A lost worker's runs are no results**, and nothing of them outlives it: a worker that
  closes (retired, restarted, its scheduler lost, SIGTERM) kills every program and compiler
  it started, and a task of its that ends or starts after that raises ``Reschedule``
  instead of answering (a killed program is not the config's failure); a worker that dies
  outright leaves its programs to its reaper (process.py), and the next worker on its GPU
  kills what the reaper has not yet before it runs anything there (gpu_claim.py).
"""

from __future__ import annotations

import logging
import os
import queue
import secrets
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..build.builder import Builder, BuildResult, BuildRules, lost_build
from ..build.cache import BuildCache
from ..errors import KsweepError, require
from ..job import Job
from ..process import DEFAULT_REGISTRY, ProcessRegistry, reap_session
from ..status import Status, Stopped
from .base import Executor
from .classify import lost
from .gate import StartGate, auto_gap
from .gpu_claim import claim
from .gpu_state import NO_MONITOR, GpuMonitor, NvmlMonitor
from .gpus import Gpu, detect_gpus
from .local_run import run_built
from .persistent import PersistentHost, host_env
from .program import RunOutcome

GPU_RESOURCE = "GPU"
GPU_NAME_ENV = "KSWEEP_GPU_NAME"  # the GPU's name where nvidia-smi cannot tell (fake GPUs)
RUN_PRIORITY = 10  # runs before builds on a worker that takes both: the GPU waits for nobody
META_PRIORITY = 20
WORKERS_REFRESH_S = 2.0
FETCH_THREADS = 4  # an executor's threads that fetch its finished tasks' values
FETCH_TIMEOUT = 600.0  # seconds a finished task's value may take to arrive before it is answered as lost


def _distributed():
    return require("distributed", "dask", "Running on a Dask cluster (--cluster)")


# -- what travels between tasks ------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """A build task's value: its result, and the binary itself unless the cache is shared."""

    result: BuildResult
    binary: bytes | None = None


def worker_pin(env: Mapping[str, str]) -> str | None:
    """The device a GPU worker's runs are pinned to: the first entry of the worker's
    ``CUDA_VISIBLE_DEVICES`` (an index, a UUID or a MIG id; dask-cuda starts each worker
    with its own GPU first), or None when the variable is unset or empty (pure)."""
    ids = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return ids[0] if ids else None


def worker_gpu(env: Mapping[str, str], detected: Sequence[Gpu]) -> Gpu:
    """The one GPU a GPU worker runs on, from its environment and nvidia-smi's list (pure).

    Its record comes from ``detected`` when nvidia-smi lists the worker's pin, else from
    the pin and ``KSWEEP_GPU_NAME``.
    """
    name = env.get(GPU_NAME_ENV)
    ident = worker_pin(env)
    if ident is None:
        if "CUDA_VISIBLE_DEVICES" in env:  # set but empty: CUDA sees no GPU
            return Gpu(index=None, name=name or "none")
        if len(detected) > 1:
            raise KsweepError(
                f"a Dask worker with resource {GPU_RESOURCE}=1 sees {len(detected)} GPUs and no "
                f"CUDA_VISIBLE_DEVICES: start one worker per GPU, each with CUDA_VISIBLE_DEVICES=<index>")
        return detected[0] if detected else Gpu(index=None, name=name or "none")
    for gpu in detected:
        if ident == str(gpu.index) or ident == gpu.uuid:
            return gpu
    if ident.isdigit():
        return Gpu(index=int(ident), name=name or "unknown")
    return Gpu(index=None, name=name or "unknown", uuid=ident)


# -- the tasks (they run on the workers) -----------------------------------------------


def _worker_dir() -> Path:
    """This worker's local directory (a temporary one outside a worker, e.g. in tests)."""
    try:
        return Path(_distributed().get_worker().local_directory)
    except ValueError:  # not running on a worker
        return Path(tempfile.gettempdir()) / f"ksweep-worker-{os.getpid()}"


_builders: dict[tuple[str, BuildRules], Builder] = {}
_builders_lock = threading.Lock()


def _builder(cache_dir: str, rules: BuildRules) -> Builder:
    with _builders_lock:
        key = (cache_dir, rules)
        if key not in _builders:
            _builders[key] = Builder(BuildCache(Path(cache_dir)), rules)
        return _builders[key]


_registries: dict[str, ProcessRegistry] = {}
_registries_lock = threading.Lock()


def _registry(owner: str | None) -> ProcessRegistry:
    """The processes this worker started for one sweep (``owner``: its executor's token), so
    that stopping that sweep kills them and no other sweep's on a shared cluster."""
    if owner is None:
        return DEFAULT_REGISTRY
    with _registries_lock:
        return _registries.setdefault(owner, ProcessRegistry())


_LEAVING = threading.Event()  # this worker is closing: its tasks give no answer


def worker_leaving() -> None:
    """On a worker that closes (its plugin's teardown, dask_plugin.py): every program and
    compiler it started, for every sweep, and its persistent hosts are killed; a task that
    ends or starts after this raises ``Reschedule`` (``_answer``), so that what its killed
    program did is never taken for the config's result."""
    _LEAVING.set()
    with _registries_lock:
        registries = [*_registries.values(), DEFAULT_REGISTRY]
    for registry in registries:
        registry.kill_all(reap=False)
    with _hosts_lock:
        hosts = list(_hosts.values())
    for host in hosts:
        host.close(kill=True)
    reap_session()


def _answer() -> None:
    """Raise ``Reschedule`` on a worker that is leaving: the scheduler gives the task to another."""
    if _LEAVING.is_set():
        raise _distributed().Reschedule()


def build_task(job: Job, rules: BuildRules, shared_cache: str | None, owner: str | None = None) -> Built:
    """Build one job on this worker; ship the binary's bytes unless the cache is shared."""
    _answer()
    cache_dir = shared_cache or str(_worker_dir() / "ksweep-cache")
    result = _builder(cache_dir, rules).build(job, _registry(owner))
    _answer()
    if shared_cache is None and isinstance(result, BuildResult) and result.status is Status.OK \
            and result.binary is not None:
        return Built(result, result.binary.read_bytes())
    return Built(result)


def build_metadata(built: Built) -> BuildResult:
    return built.result


_MONITOR: list = []  # this worker process's NVML monitor, made on its first run


def _worker_monitor(gpu: Gpu) -> GpuMonitor:
    """This worker's NVML monitor (one per worker process), or none without a real GPU."""
    if gpu.index is None or gpu.name == "fake" or os.environ.get(GPU_NAME_ENV):
        return NO_MONITOR
    if not _MONITOR:
        _MONITOR.append(NvmlMonitor())
    return _MONITOR[0]


@lru_cache(maxsize=1)
def _this_worker_gpu() -> Gpu:
    return worker_gpu(os.environ, detect_gpus())


_hosts: dict[str | None, PersistentHost] = {}
_hosts_lock = threading.Lock()


def _worker_host(pin: str | None) -> PersistentHost:
    """This worker's persistent host (it lives as long as the worker process)."""
    with _hosts_lock:
        if pin not in _hosts:
            _hosts[pin] = PersistentHost(host_env(None, pin))
        return _hosts[pin]


def _write_executable(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _harness_path(harness: Built, job: Job, root: Path) -> Path | None:
    """Where this worker keeps a harness (``job``): written once per cache key (its runs
    share it), or the shared cache's copy."""
    if harness.binary is None:
        return harness.result.binary
    path = root / "harness" / job.cache_key / job.output
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{job.output}.tmp-{os.getpid()}-{threading.get_ident()}")
        _write_executable(tmp, harness.binary)
        os.replace(tmp, path)
    return path


def run_task(job: Job, built: Built, start_gap: float = 0.0, harness: Built | None = None,
             owner: str | None = None) -> RunOutcome:
    """Run one built job on this worker's GPU; the binary is written out first if it came in the task.
    ``start_gap``: seconds between process starts on this host (0: no gate). ``harness``: the
    built harness of the job's shape × variant, if it has one."""
    _answer()
    gpu = _this_worker_gpu()
    root = _worker_dir()
    workdir = None
    build = built.result
    try:
        if built.binary is not None:
            root.mkdir(parents=True, exist_ok=True)
            workdir = Path(tempfile.mkdtemp(prefix="bin-", dir=root))
            path = workdir / job.output
            _write_executable(path, built.binary)
            build = replace(build, binary=path)
        harness_built = harness.result if harness is not None else None
        if isinstance(harness_built, BuildResult) and harness_built.status is Status.OK:
            harness_built = replace(harness_built, binary=_harness_path(harness, job.harness, root))
        pin = worker_pin(os.environ)
        if pin is not None:  # the worker's own device id, not an nvidia-smi index CUDA may number differently
            job = replace(job, run_env={**job.run_env, "CUDA_VISIBLE_DEVICES": pin})
        gate = StartGate(start_gap) if start_gap > 0 and not job.persistent else None
        host = _worker_host(pin) if job.persistent else None
        device = pin or gpu.uuid or (str(gpu.index) if gpu.index is not None else None)
        if device is not None:  # a dead worker's program may still run there: it goes first
            claim(device)
        outcome = run_built(job, build, replace(gpu, index=None), root / "ksweep-runs", gate=gate,
                            harness=harness_built, host=host, monitor=_worker_monitor(gpu),
                            monitor_index=gpu.index, registry=_registry(owner))
        _answer()
        return outcome if isinstance(outcome, Stopped) else replace(outcome, gpu=gpu)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


def dask_setup(worker) -> None:
    """Preload of the local cluster's workers (``preload=[this module]``). They share the
    terminal of ``ksweep run``, whose Ctrl-C reaches them too: the client stops their runs
    (``shutdown(cancel=True)``), so a worker must not die first and orphan its programs."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_heartbeat_failures()


class _HeartbeatFailure(logging.Filter):
    """Drops the traceback a worker logs when its heartbeat finds the scheduler gone."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to communicate with scheduler during heartbeat")


def quiet_heartbeat_failures() -> None:
    """In a local cluster's worker: its scheduler lives in ``ksweep run``'s own process and goes
    only when that closes it, and a heartbeat under way then logged a traceback on the user's
    terminal (a Ctrl-C'd sweep's test saw it once, in a full test run)."""
    worker_log = logging.getLogger("distributed.worker")
    if not any(isinstance(f, _HeartbeatFailure) for f in worker_log.filters):
        worker_log.addFilter(_HeartbeatFailure())


def _stop_runs(owner: str, resume: bool) -> int:
    """On a worker: kill the programs of one sweep's cancelled builds and runs (whole process
    groups). ``resume``: the cluster outlives this sweep and may serve others, whose
    processes it leaves alone; else (this sweep's own cluster) every process this worker
    started goes too."""
    # kept, stopping: a task of this sweep that starts later stops at once instead of running
    registry = _registry(owner)
    killed = registry.kill_all(reap=not resume)
    if not resume:
        killed += DEFAULT_REGISTRY.kill_all()
    return killed


# -- the client side -------------------------------------------------------------------


class _Fetches:
    """Calls handed over from distributed's callback thread, made on a few threads of their
    own. Daemon threads: a call that never returns (a value no worker holds any more) holds
    one of them, not the process at its exit, as a ThreadPoolExecutor's thread would."""

    def __init__(self, threads: int):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"ksweep-dask-results-{i}", daemon=True)
                         for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable, *args) -> None:
        self._queue.put((fn, args))

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, args = item
            fn(*args)

    def close(self) -> None:
        """The threads end once what was handed over before is done (each call may return at once)."""
        for _ in self._threads:
            self._queue.put(None)


class DaskExecutor(Executor):
    """Builds and runs on a Dask cluster, behind the executor contract (run/base.py).

    ``client``: a ``distributed.Client``. ``rules``: post-compile pruning, applied on the
    build workers. ``shared_cache``: a build cache every worker sees at this path (then
    binaries travel by path); None: each worker caches in its local directory and the
    binaries travel in the tasks. ``retries``: re-runs of a task that raised. The client
    (``close_client``) and ``cluster`` are closed by ``shutdown`` when given.
    ``start_gap``: seconds between run starts on one host; None: the default gap on hosts with
    several GPU workers, none on the others. ``fetch_timeout``: seconds a finished task's value
    may take to arrive (the worker that held it may be gone); past them the task is answered as
    lost, and its fetch thread is free again.
    """

    def __init__(self, client, rules: BuildRules, *, shared_cache: str | Path | None = None,
                 retries: int = 2, gpu_wait: float = 120.0, close_client: bool = False, cluster=None,
                 start_gap: float | None = None, fetch_timeout: float = FETCH_TIMEOUT):
        self.client = client
        self.fetch_timeout = fetch_timeout
        self.start_gap = start_gap
        self.rules = rules
        self.shared_cache = str(shared_cache) if shared_cache is not None else None
        self.retries = retries
        self._close_client = close_client
        self._cluster = cluster
        self._lock = threading.Lock()
        # dask futures in flight (one the client drops is forgotten by the scheduler), each with the
        # future handed to the driver
        self._live: dict[Any, Future] = {}
        self._binaries: dict[int, tuple[BuildResult, Any]] = {}  # id(result handed out) -> its build future
        self._harnesses: dict[str, Any] = {}  # harness cache key -> its build future (held for every run)
        self._workers: dict[str, dict] = {}
        self._workers_at = float("-inf")
        self._closed = False
        self._owner = secrets.token_hex(8)  # its tasks' processes, apart from other sweeps' on the workers
        from .dask_plugin import OnClose  # imports distributed

        # every worker, and each that joins later, kills its programs when it closes (once per cluster)
        client.register_plugin(OnClose("ksweep-worker-leaving", worker_leaving))
        self._wait_for_gpus(gpu_wait)
        # the results' fetches (``_bridge``): a few at once, so that one slow to arrive holds back
        # no other; started last, so that an executor that could not start leaves no thread
        self._fetches = _Fetches(FETCH_THREADS)

    # -- cluster view ----------------------------------------------------------------------
    def _worker_info(self) -> dict[str, dict]:
        now = time.monotonic()
        if now - self._workers_at > WORKERS_REFRESH_S:
            self._workers = dict(self.client.scheduler_info(n_workers=-1)["workers"])
            self._workers_at = now
        return self._workers

    def _gpu_slots(self) -> int:
        return sum(int(w.get("resources", {}).get(GPU_RESOURCE, 0)) for w in self._worker_info().values())

    def _wait_for_gpus(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self._gpu_slots() == 0:
            if time.monotonic() > deadline:
                raise KsweepError(
                    f"the Dask cluster {self.client.scheduler.address} has no worker with resource "
                    f"{GPU_RESOURCE} after {timeout:g} s: start one worker per GPU with "
                    f"`dask worker ADDRESS --nthreads 1 --resources {GPU_RESOURCE}=1` and CUDA_VISIBLE_DEVICES=<index>")
            time.sleep(0.5)
            self._workers_at = float("-inf")

    def _gpu_workers_per_host(self) -> int:
        hosts = Counter(w.get("host") or address.rsplit(":", 1)[0] for address, w in self._worker_info().items()
                        if w.get("resources", {}).get(GPU_RESOURCE))
        return max(hosts.values(), default=0)

    def _start_gap(self) -> float:
        return auto_gap(self._gpu_workers_per_host()) if self.start_gap is None else self.start_gap

    @property
    def run_slots(self) -> int:
        # never 0: while the GPU workers are being replaced, runs wait at the scheduler
        return max(1, self._gpu_slots())

    @property
    def build_jobs(self) -> int:
        info = self._worker_info().values()
        cpu = [w for w in info if not w.get("resources", {}).get(GPU_RESOURCE)]
        return max(1, sum(int(w.get("nthreads", 1)) for w in (cpu or info)))

    def _build_placement(self) -> dict:
        cpu = [a for a, w in self._worker_info().items() if not w.get("resources", {}).get(GPU_RESOURCE)]
        return {"workers": cpu, "allow_other_workers": True} if cpu else {}

    # -- the executor interface -----------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("DaskExecutor: a build or run submitted after shutdown")

    def submit_build(self, job: Job) -> Future:
        self._check_open()
        if job.is_harness:  # built once per sweep (another shape may share it); its future goes to the runs
            built = self._harness_build(job)
        else:
            built = self._submit_build_task(job)
        meta = self.client.submit(build_metadata, built, pure=False, priority=META_PRIORITY)

        def keep(result: BuildResult) -> BuildResult:
            if isinstance(result, BuildResult) and result.status is Status.OK and not job.is_harness:
                # hold the binary until its run is submitted
                with self._lock:
                    if not self._closed:  # (a fetch may end after shutdown, which let go of every task)
                        self._binaries[id(result)] = (result, built)
            return result

        def killed(exc: BaseException) -> BuildResult:
            return lost_build(_killed_message("build", exc))

        return self._bridge(meta, keep, killed)

    def _submit_build_task(self, job: Job):
        return self.client.submit(build_task, job, self.rules, self.shared_cache, self._owner, pure=False,
                                  retries=self.retries, **self._build_placement())

    def _harness_build(self, harness: Job):
        """The build future of a harness: one task per cache key for the executor's lifetime."""
        with self._lock:
            known = self._harnesses.get(harness.cache_key)
        if known is None:
            known = self._submit_build_task(harness)
            with self._lock:
                known = self._harnesses.setdefault(harness.cache_key, known)
        return known

    def _harness(self, job: Job):
        """What a run task needs of its harness: the build future, if the run command names it
        (a harness linked into each config is only needed by the builds, which make their own)."""
        if job.harness is None or not any("{harness}" in a for a in job.run_argv):
            return None
        return self._harness_build(job.harness)

    def submit_run(self, job: Job, build: BuildResult) -> Future:
        self._check_open()
        with self._lock:
            entry = self._binaries.pop(id(build), None)
        built = entry[1] if entry is not None else Built(build)  # shared cache, or nothing built
        run = self.client.submit(run_task, job, built, self._start_gap(), self._harness(job), self._owner, pure=False,
                                 resources={GPU_RESOURCE: 1}, retries=self.retries, priority=RUN_PRIORITY)

        def killed(exc: BaseException) -> RunOutcome:
            return RunOutcome(*lost(_killed_message("run", exc)))

        return self._bridge(run, lambda outcome: outcome, killed)

    def _bridge(self, dask_future, on_value: Callable, on_killed: Callable) -> Future:
        """A concurrent.futures.Future that follows ``dask_future``. Its value is fetched on
        this executor's own threads, never on distributed's callback thread: that one thread
        runs the done callbacks of every client in the process, and a fetch that never returns
        (the key of a closed executor's future, already released; data a dead worker held)
        held it, and with it every later result of every sweep in the process."""
        killed_worker = _distributed().KilledWorker
        future: Future = Future()
        future.set_running_or_notify_cancel()
        with self._lock:
            self._live[dask_future] = future

        def fetch(f) -> None:
            if self._closed:  # shut down since: its future was answered then
                return
            try:
                try:
                    got = f.result(timeout=self.fetch_timeout)
                except TimeoutError:
                    if getattr(f, "status", None) == "error":  # the task's own, raised again here
                        raise
                    value = on_killed(_NotFetched(self.fetch_timeout))
                except killed_worker as exc:
                    value = on_killed(exc)
                else:
                    value = on_value(got)
            except BaseException as exc:  # noqa: BLE001 - handed to the driver as it is
                outcome = (future.set_exception, exc)
            else:
                outcome = (future.set_result, value)
            with self._lock:
                answer = self._live.pop(f, None) is not None  # not answered by shutdown meanwhile
            if answer:
                outcome[0](outcome[1])

        def done(f) -> None:  # on distributed's callback thread: hand over, never wait
            with self._lock:
                if self._closed:  # nobody waits for it; its key may be gone from the scheduler
                    return
                self._fetches.submit(fetch, f)

        dask_future.add_done_callback(done)
        return future

    def shutdown(self, cancel: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending = [*self._live, *(built for _, built in self._binaries.values()), *self._harnesses.values()]
            # what is still to come is cancelled: its future says so now, whatever its task does
            unanswered = list(self._live.values())
            self._live.clear()
            self._binaries.clear()
            self._harnesses.clear()
        try:
            self._fetches.close()
            for future in unanswered:
                future.set_exception(CancelledError())
            if cancel:
                self.client.cancel(pending, force=True)
                # a closing worker would leave its programs' children behind, and wait for its runs
                try:
                    self.client.run(_stop_runs, self._owner, self._cluster is None)
                except Exception:  # noqa: BLE001 - a worker already gone has no programs left to stop
                    pass
        finally:
            if self._close_client:
                self.client.close()
            if self._cluster is not None:
                self._cluster.close()


class _NotFetched(Exception):
    """A finished task's value that did not arrive within ``seconds``."""

    def __init__(self, seconds: float):
        super().__init__(f"not fetched within {seconds:g} s")
        self.seconds = seconds


def _killed_message(what: str, exc: BaseException) -> str:
    if isinstance(exc, _NotFetched):
        return (f"the {what}'s result could not be fetched from the cluster within {exc.seconds:g} s (the worker "
                f"that held it lost?); not tried again")
    allowed = getattr(exc, "allowed_failures", None)
    last = getattr(getattr(exc, "last_worker", None), "address", None)
    tries = f"{allowed + 1} workers" if isinstance(allowed, int) else "several workers"
    return (f"the {what} killed every Dask worker that ran it ({tries}" + (f", the last {last}" if last else "")
            + "); not tried again (distributed.scheduler.allowed-failures)")


# -- making one ------------------------------------------------------------------------


def local_cluster(gpus: Sequence[Gpu], *, build_workers: int = 1, build_threads: int | None = None,
                  allowed_failures: int = 3, silence_logs: int = logging.ERROR):
    """A ``distributed.LocalCluster`` of worker processes: one per GPU (resource GPU=1, one
    thread, its own CUDA_VISIBLE_DEVICES) and ``build_workers`` without a GPU resource."""
    distributed = _distributed()
    cluster = _nannies_own_cluster(distributed)(
        n_workers=0, processes=True, threads_per_worker=1, dashboard_address=None,
        silence_logs=silence_logs, scheduler_kwargs={"allowed_failures": allowed_failures},
    )
    template = cluster.new_spec
    options = {**template["options"], "preload": [__name__], "config": worker_config()}
    specs = {}
    for gpu in gpus:
        env = {GPU_NAME_ENV: gpu.name}
        if gpu.index is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu.index)
        name = f"gpu-{gpu.index if gpu.index is not None else 'none'}"
        specs[name] = {"cls": template["cls"], "options": {
            **options, "nthreads": 1, "resources": {GPU_RESOURCE: 1}, "env": env}}
    for i in range(build_workers):
        specs[f"build-{i}"] = {"cls": template["cls"], "options": {
            **options, "nthreads": build_threads or os.cpu_count() or 1}}
    cluster.worker_spec.update(specs)
    cluster.scale(len(cluster.worker_spec))
    return cluster


def worker_config(base: dict | None = None) -> dict:
    """The dask config of a local cluster's workers: ``base`` (default: this process's), with an idle
    worker's CPU left to the builds on this host. No statistical profiler (it samples every 10
    ms; with no dashboard nobody reads it), and the event loop's watch (every 20 ms) and the
    memory watch (every 100 ms; the programs' memory is not the worker's) once a second. Whole:
    a nanny merges it over its own process's config at the top level only (and so a worker
    it restarts runs with it too)."""
    import dask.config

    return dask.config.merge(dask.config.config if base is None else base, {"distributed": {
        "worker": {"profile": {"enabled": False}, "memory": {"monitor-interval": "1s"}},
        "admin": {"tick": {"interval": "1s"}}}})


def _nannies_own_cluster(distributed):
    """``LocalCluster`` whose lost workers are their nannies' to bring back. distributed's
    cluster object closes the nanny of a worker not back ``lost-worker-timeout`` (15 s) after
    it left: a restart slower than that, or a second one that long after a first, closed the
    nanny while it was restarting its worker, and the cluster lost that GPU for good."""

    class LocalCluster(distributed.LocalCluster):  # its repr says LocalCluster, as distributed's
        def _update_worker_status(self, op, msg):
            super(distributed.SpecCluster, self)._update_worker_status(op, msg)  # not SpecCluster's

    return LocalCluster


def start_local(gpus: Sequence[Gpu], rules: BuildRules, *, shared_cache: str | Path | None = None,
                build_workers: int = 1, build_threads: int | None = None, retries: int = 2,
                allowed_failures: int = 3, timeout: float = 120.0, start_gap: float | None = None) -> DaskExecutor:
    """A DaskExecutor on a new local cluster, closed with the executor."""
    distributed = _distributed()
    if not gpus:
        raise KsweepError("a local Dask cluster needs at least one GPU worker")
    cluster = local_cluster(gpus, build_workers=build_workers, build_threads=build_threads,
                            allowed_failures=allowed_failures)
    try:
        client = distributed.Client(cluster)
        client.wait_for_workers(len(cluster.worker_spec), timeout=timeout)
        return DaskExecutor(client, rules, shared_cache=shared_cache, retries=retries,
                            gpu_wait=timeout, close_client=True, cluster=cluster, start_gap=start_gap)
    except BaseException:
        cluster.close()
        raise


def connect(address: str, rules: BuildRules, *, shared_cache: str | Path | None = None,
            retries: int = 2, timeout: float = 120.0, start_gap: float | None = None) -> DaskExecutor:
    """A DaskExecutor on the running scheduler at ``address`` (e.g. tcp://host:8786)."""
    distributed = _distributed()
    try:
        client = distributed.Client(address, timeout=timeout)
    except OSError as exc:
        raise KsweepError(f"--cluster {address}: cannot reach a Dask scheduler there ({exc}); "
                          f"start one with `dask scheduler` or use --cluster local") from exc
    try:
        return DaskExecutor(client, rules, shared_cache=shared_cache, retries=retries,
                            gpu_wait=timeout, close_client=True, start_gap=start_gap)
    except BaseException:
        client.close()
        raise
