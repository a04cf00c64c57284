"""Wire a sweep together on this host: store, build cache, builder, executor."""

from __future__ import annotations

import os
from pathlib import Path

from ..build.builder import Builder, BuildRules
from ..build.cache import BuildCache
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


def make_builder(spec: Spec, cache_dir: Path | None = None) -> Builder:
    rules = BuildRules(
        max_registers=spec.build.max_registers or spec.limits.get("regs_per_thread"),
        allow_spills=spec.build.allow_spills,
    )
    return Builder(BuildCache(cache_dir or workspace(spec) / "cache"), rules)


def make_executor(spec: Spec, gpus: list[int] | None = None, jobs: int | None = None,
                  kernel_backend: str = "cuda"):
    """The local executor of a spec: program mode, or kernel mode's persistent workers."""
    gpu_list = select_gpus(detect_gpus(), gpus)
    build_jobs = jobs or spec.build.jobs or os.cpu_count()
    scratch = workspace(spec) / "scratch"
    if spec.kernel is None:
        return LocalExecutor(make_builder(spec), gpu_list, scratch, build_jobs=build_jobs)
    from ..kernel.executor import KernelExecutor

    sizes = {s.name: {**spec.constants, **s.constants, **s.defines} for s in spec.shape_list()}
    return KernelExecutor(make_builder(spec), gpu_list, scratch, spec.kernel, spec.root, sizes,
                          build_jobs=build_jobs, backend=kernel_backend)


def run_sweep(spec: Spec, *, db: str | Path | None = None, options: SweepOptions = SweepOptions(),
              gpus: list[int] | None = None, jobs: int | None = None, observer=None,
              executor=None, kernel_backend: str = "cuda") -> tuple[Summary, Path]:
    db_path = Path(db) if db else default_db_path(spec)
    store = Store(db_path)
    own_executor = executor is None
    if executor is None:
        executor = make_executor(spec, gpus, jobs, kernel_backend)
    try:
        summary = Sweep(spec, store, executor, options, observer).run()
    finally:
        if own_executor:
            executor.shutdown()
        store.close()
    return summary, db_path
