"""The wiring: a spec's run mode and executor, chosen here once (the sweep loop knows them
by their contracts), and the files a command works on (the spec, its database, the build
cache)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import KsweepError
from ..kernel.executor import KernelExecutor, shape_sizes
from ..kernel.mode import KernelMode
from ..outputs import writable_folder
from ..run.executor import LocalExecutor
from ..run.gpus import Gpu, detect_gpus, select_gpus
from ..run.modes import Mode, program_mode
from ..spec.load import load_spec
from ..spec.model import Spec
from ..sweep.local import build_rules, cache_dir_of, default_db_path, make_builder, scratch_dir
from ..workspace import workspace

__all__ = ["cache_folder", "check_sweep_folders", "database", "load_spec", "make_dask_executor", "make_executor", "mode_for"]


def mode_for(spec: Spec, kernel_backend: str = "cuda") -> Mode:
    """The run mode of a spec: kernel mode for a [kernel] spec, else a process per run or a
    persistent host (``[run] persistent``)."""
    return KernelMode(kernel_backend) if spec.kernel is not None else program_mode(spec)


def make_executor(spec: Spec, gpus: list[int] | None = None, jobs: int | None = None,
                  kernel_backend: str = "cuda", start_gap: float | None = None, cache: str | Path | None = None):
    """The local executor of a spec: program mode, or kernel mode's persistent workers.
    ``start_gap`` (else ``[run] start_gap``, else automatic): seconds between run starts.
    ``cache``: the build cache's folder (else ``.ksweep/cache`` beside the spec)."""
    gpu_list = select_gpus(detect_gpus(), gpus)
    build_jobs = jobs or spec.build.jobs or os.cpu_count()
    scratch = scratch_dir(spec)
    if spec.kernel is None:
        gap = start_gap if start_gap is not None else spec.run.start_gap
        return LocalExecutor(make_builder(spec, cache and Path(cache)), gpu_list, scratch, build_jobs=build_jobs, start_gap=gap)
    sizes = {s.name: shape_sizes(spec, s) for s in spec.shape_list()}
    return KernelExecutor(make_builder(spec, cache and Path(cache)), gpu_list, scratch, spec.kernel, spec.root, sizes,
                          build_jobs=build_jobs, backend=kernel_backend,
                          race=(spec.objective.metric, spec.objective.direction) == ("ms", "min"))


def make_dask_executor(spec: Spec, cluster: str, *, gpus: list[int] | None = None, fake_gpus: int | None = None,
                       jobs: int | None = None, shared_cache: str | Path | None = None,
                       start_gap: float | None = None):
    """A DaskExecutor for ``--cluster``: 'local' starts a LocalCluster on this host (one worker
    per GPU, or per fake GPU, plus a build worker); an address connects to a running scheduler."""
    from ..run import dask_executor

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
            chosen, rules, shared_cache=shared_cache or cache_dir_of(spec),
            build_threads=jobs or spec.build.jobs or os.cpu_count(), start_gap=gap,
        )
    if gpus is not None or fake_gpus:
        raise KsweepError(f"--gpus and --fake-gpus choose the GPUs of this host; on the cluster {cluster} "
                          f"every worker started with --resources GPU=1 runs (drop them, or use --cluster local)")
    return dask_executor.connect(cluster, rules, shared_cache=shared_cache, start_gap=gap)


def cache_folder(db: str | Path | None, cache: str | Path | None) -> str | Path | None:
    """The build cache: ``cache`` when given, else ``cache/`` beside a database the caller
    named, else None (``.ksweep/cache`` beside the spec)."""
    if cache is None and db:
        return Path(db).resolve().parent / "cache"  # absolute: compilers run in folders of their own
    return Path(cache).resolve() if cache is not None else None


def check_sweep_folders(spec: Spec, db: str | Path | None = None, cache: str | Path | None = None) -> None:
    """Before any work: the folders a sweep writes can be written — the database's, the build
    cache's (``cache``, else ``.ksweep/cache`` beside the spec) and the scratch folder of its
    runs (``.ksweep/`` beside the spec); one line naming the first that cannot."""
    path = database(spec, db)
    writable_folder(path.parent, why=f"the results database {path.name} is kept there",
                    fix="give --db in a folder you can write")
    writable_folder(cache_dir_of(spec, cache), why="the build cache is kept there",
                    fix="give --cache (or --db: the cache goes beside it) in a folder you can write")
    writable_folder(workspace(spec), why="the runs' scratch files are kept in .ksweep/ beside the spec",
                    fix="copy the spec and its sources to a folder you can write")


def database(spec: Spec, db: str | Path | None = None) -> Path:
    """The results database of a spec: ``db`` when given, else ``.ksweep/<spec>.db`` beside it."""
    return Path(db) if db else default_db_path(spec)
