"""Wire a sweep together on this host: store, build cache, builder, executor."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..build.builder import Builder, BuildRules
from ..build.cache import BuildCache
from ..errors import SpecError
from ..process import reap_session
from ..run.executor import LocalExecutor
from ..run.gpus import detect_gpus, select_gpus
from ..spec.model import Spec
from ..store.sqlite import Store
from .driver import Summary, Sweep, SweepOptions


def workspace(spec: Spec) -> Path:
    """Where ksweep keeps a spec's database, build cache and scratch folders."""
    return spec.root / ".ksweep"


def default_db_path(spec: Spec) -> Path:
    stem = spec.path.stem if spec.path else spec.name
    return workspace(spec) / f"{stem}.db"


def build_rules(spec: Spec) -> BuildRules:
    return BuildRules(
        max_registers=spec.build.max_registers or spec.limits.get("regs_per_thread"),
        allow_spills=spec.build.allow_spills,
    )


def make_builder(spec: Spec, cache_dir: Path | None = None) -> Builder:
    cache = BuildCache(cache_dir or workspace(spec) / "cache")
    cache.clean_leftovers()  # scratch folders of builds killed mid-way
    return Builder(cache, build_rules(spec))


def scratch_dir(spec: Spec) -> Path:
    """This process's folder for run folders: ``scratch/<pid>``; the folders of processes that
    are gone (killed before they could clean up) are removed on the way."""
    root = workspace(spec) / "scratch"
    try:
        entries = list(root.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.name.isdigit() and not _alive(int(entry.name)):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith("run-"):  # the flat layout of earlier versions
            shutil.rmtree(entry, ignore_errors=True)
    return root / str(os.getpid())


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_executor(spec: Spec, gpus: list[int] | None = None, jobs: int | None = None,
                  kernel_backend: str = "cuda", start_gap: float | None = None):
    """The local executor of a spec: program mode, or kernel mode's persistent workers.
    ``start_gap`` (else ``[run] start_gap``, else automatic): seconds between run starts."""
    gpu_list = select_gpus(detect_gpus(), gpus)
    build_jobs = jobs or spec.build.jobs or os.cpu_count()
    scratch = scratch_dir(spec)
    if spec.kernel is None:
        gap = start_gap if start_gap is not None else spec.run.start_gap
        return LocalExecutor(make_builder(spec), gpu_list, scratch, build_jobs=build_jobs, start_gap=gap)
    from ..kernel.executor import KernelExecutor

    sizes = {s.name: {**spec.constants, **s.constants, **s.defines} for s in spec.shape_list()}
    return KernelExecutor(make_builder(spec), gpu_list, scratch, spec.kernel, spec.root, sizes,
                          build_jobs=build_jobs, backend=kernel_backend)


def run_sweep(spec: Spec, *, db: str | Path | None = None, options: SweepOptions = SweepOptions(),
              gpus: list[int] | None = None, jobs: int | None = None, observer=None,
              executor=None, kernel_backend: str = "cuda", start_gap: float | None = None) -> tuple[Summary, Path]:
    db_path = Path(db) if db else default_db_path(spec)
    check_sources(spec, options.variants)  # before anything is created beside the spec
    store = Store(db_path)
    own_executor = executor is None
    try:
        if executor is None:
            executor = make_executor(spec, gpus, jobs, kernel_backend, start_gap)
        summary = Sweep(spec, store, executor, options, observer).run()
    finally:
        if own_executor and executor is not None:
            executor.shutdown()
        store.close()
        if own_executor:
            reap_session()  # a daemon a run left behind with its output closed: nothing of ours runs now
            shutil.rmtree(scratch_dir(spec), ignore_errors=True)
    return summary, db_path


def check_sources(spec: Spec, variants: tuple[str, ...] | None = None) -> None:
    """Every source the chosen variants list exists (one line naming the first that does not)."""
    for v in spec.variant_list():
        if variants and v.name not in variants:
            continue
        listed = v.sources if v.sources is not None else spec.build.sources
        key = f"variants.{v.name}.sources" if v.sources is not None else "build.sources"
        for rel in listed:
            if not (spec.root / rel).exists():
                raise SpecError(f"source '{rel}' does not exist (looked for {spec.root / rel}): "
                                f"fix {key}, or run from where the sources are", path=spec.label, key=key)


def make_dask_executor(spec: Spec, cluster: str, *, gpus: list[int] | None = None, fake_gpus: int | None = None,
                       jobs: int | None = None, shared_cache: str | Path | None = None,
                       start_gap: float | None = None):
    """A DaskExecutor for ``--cluster``: 'local' starts a LocalCluster on this host (one worker
    per GPU, or per fake GPU, plus a build worker); an address connects to a running scheduler."""
    from ..errors import KsweepError
    from ..run import dask_executor
    from ..run.gpus import Gpu

    if spec.kernel is not None:
        raise KsweepError(f"{spec.label}: --cluster runs program-mode specs; a [kernel] spec runs on this "
                          f"host's GPUs (drop --cluster, and use --gpus to pick them)")
    rules = build_rules(spec)
    gap = start_gap if start_gap is not None else spec.run.start_gap
    if cluster == "local":
        if fake_gpus:
            chosen = [Gpu(index=i, name="fake") for i in (gpus or range(fake_gpus))]
        else:
            chosen = select_gpus(detect_gpus(), gpus)
        return dask_executor.start_local(
            chosen, rules, shared_cache=shared_cache or workspace(spec) / "cache",
            build_threads=jobs or spec.build.jobs or os.cpu_count(), start_gap=gap,
        )
    if gpus is not None or fake_gpus:
        raise KsweepError(f"--gpus and --fake-gpus choose the GPUs of this host; on the cluster {cluster} "
                          f"every worker started with --resources GPU=1 runs (drop them, or use --cluster local)")
    return dask_executor.connect(cluster, rules, shared_cache=shared_cache, start_gap=gap)
