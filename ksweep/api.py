"""The front door: sweep a spec, or tune a bare kernel, with everything wired.

This module sits above the layers (spec → space → strategy → build → run → verify →
store → report): it is where a spec's run mode and executor are chosen, once.

    import ksweep
    spec = ksweep.load_spec("sgemm.toml")
    summary, db = ksweep.run_sweep(spec, options=ksweep.SweepOptions(strategy="auto", max_evals=100))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .verify.confirm import Confirmation
from .errors import KsweepError, SpecError
from .gpu.limits import DEFAULT_ARCH, builtin_limits
from .kernel.executor import KernelExecutor, shape_sizes
from .kernel.mode import KernelMode
from .report.pareto import front_ids
from .report.records import to_csv
from .result import Result
from .run.executor import LocalExecutor
from .run.gpus import Gpu, detect_gpus, select_gpus
from .run.modes import Mode, program_mode
from .spec.expr import parse
from .spec.load import validate_names
from .spec.model import Constraint, Objective, Param, Shape, Spec
from .spec.kernel import Timing, kernel_spec_from_dict
from .status import Status
from .store import standings
from .store.sqlite import Store
from .sweep.driver import Summary, SweepOptions
from .sweep.local import build_rules, finished_sweep, make_builder, run_with, scratch_dir, workspace


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
    from .run import dask_executor

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


def run_sweep(spec: Spec, *, db: str | Path | None = None, options: SweepOptions = SweepOptions(),
              gpus: list[int] | None = None, jobs: int | None = None, observer=None,
              executor=None, kernel_backend: str = "cuda", start_gap: float | None = None,
              cache: str | Path | None = None, strategy_factory=None) -> tuple[Summary, Path]:
    """Sweep a spec on this host (or on ``executor``, which the caller then shuts down):
    build, run, verify and store every config the strategy proposes; resumes from ``db``.
    ``cache``: the build cache's folder (else ``cache/`` beside ``db`` when it is given, else
    ``.ksweep/cache`` beside the spec)."""
    cache = cache_folder(db, cache)
    return run_with(spec, lambda: make_executor(spec, gpus, jobs, kernel_backend, start_gap, cache),
                    mode_for(spec, kernel_backend), db=db, options=options, observer=observer, executor=executor,
                    strategy_factory=strategy_factory)


def cache_folder(db: str | Path | None, cache: str | Path | None) -> str | Path | None:
    """The build cache: ``cache`` when given, else ``cache/`` beside a database the caller
    named, else None (``.ksweep/cache`` beside the spec)."""
    if cache is None and db:
        return Path(db).resolve().parent / "cache"  # absolute: compilers run in folders of their own
    return Path(cache).resolve() if cache is not None else None


@dataclass(frozen=True)
class SweepRun:
    """What ``tune`` did: the summary (None when interrupted), the database and its CSV."""

    summary: Summary | None
    db: Path
    csv: Path | None


def tune(spec: Spec, *, db: str | Path | None = None, options: SweepOptions = SweepOptions(),
          gpus: list[int] | None = None, jobs: int | None = None, cluster: str | None = None,
          fake_gpus: int | None = None, shared_cache: str | Path | None = None, start_gap: float | None = None,
          observer=None, cache: str | Path | None = None) -> SweepRun:
    """``ksweep run``'s workflow as a call: choose the executor (this host, or a Dask cluster
    with ``cluster``), run the sweep, and write every stored result to a CSV beside the
    database. Ctrl-C raises ``ksweep.errors.Interrupted`` (its ``summary`` says what was
    evaluated) after the executor is shut down; the CSV is written either way."""
    from .sweep.local import default_db_path

    if cluster is None and (fake_gpus or shared_cache):
        raise KsweepError("--fake-gpus and --shared-cache apply to a Dask cluster: add --cluster local")
    db_path = Path(db) if db else default_db_path(spec)
    cache = cache_folder(db, cache)
    executor = None
    interrupted = False
    summary = None
    try:
        if cluster is not None:
            # the cache beside the database is shared only by a local cluster's workers: a remote
            # one's cannot see this host's folders, and the binaries travel in its tasks
            local = shared_cache or (cache if cluster == "local" else None)
            executor = make_dask_executor(spec, cluster, gpus=gpus, fake_gpus=fake_gpus, jobs=jobs,
                                          shared_cache=local, start_gap=start_gap)
        summary, db_path = run_sweep(spec, db=db_path, options=options, gpus=gpus, jobs=jobs, observer=observer,
                                     executor=executor, start_gap=start_gap, cache=cache)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with finished_sweep(summary):
            if executor is not None:
                executor.shutdown(cancel=interrupted)
            csv = write_csv(db_path)
    return SweepRun(summary, db_path, csv)


def best_result(db: str | Path, shape: str | None = None, variant: str | None = None) -> Result | None:
    """The best result of one shape × variant of a database, as ``ksweep report`` and
    ``export`` show it: the confirmation's BEST when the confirmation ran, else the ranked
    best (never a result a later sweep superseded); None when nothing is valid. ``shape``
    and ``variant`` may be left out when the database has one of them."""
    with Store(db, create=False) as store:
        pairs = sorted({(r.variant, r.shape) for r in store.results()})
        chosen = [(v, s) for v, s in pairs if (shape is None or s == shape) and (variant is None or v == variant)]
        if len(chosen) != 1:
            names = ", ".join(f"{s}/{v}" for v, s in pairs) or "none"
            raise KsweepError(f"{db}: {'no' if not chosen else 'more than one'} shape/variant matches "
                              f"(shape={shape!r}, variant={variant!r}); it holds {names}")
        v, s = chosen[0]
        return standings.best(store, v, s)


def write_csv(db: Path) -> Path | None:
    """Every result of a database as CSV beside it (``.csv``); None when there is no database
    (nothing, or a folder: the sweep's own error about it is the one to say)."""
    if not db.is_file():
        return None
    with Store(db, create=False) as store:
        found = standings.read(store)
        objectives = store.objectives()
    path = db.with_suffix(".csv")
    path.write_text(to_csv(found.results, found.confirmations, front_ids(found.results, objectives)))
    return path


@dataclass(frozen=True)
class TuneResult:
    best: Result | None
    results: tuple[Result, ...]
    db: Path

    @property
    def best_params(self) -> dict[str, Any] | None:
        return dict(self.best.params) if self.best else None


def tune_kernel(
    kernel_name: str,
    kernel_source: str | Path,
    problem_size: Mapping[str, Any],
    arguments: str | Sequence[Any],
    tune_params: Mapping[str, Sequence[Any]],
    *,
    grid: Sequence[str],
    block: Sequence[str],
    smem: str | None = None,
    restrictions: Sequence[str] = (),
    outputs: Sequence[int] = (),
    reference: str | Sequence[Any] | Mapping[str, Any] = "defaults",
    atol: float = 1e-6,
    rtol: float = 1e-5,
    arch: str = DEFAULT_ARCH,
    flags: Sequence[str] | None = None,
    compiler: str = "nvcc",
    timing: Timing | None = None,
    strategy: str = SweepOptions.strategy,
    max_evals: int | None = None,
    confirm: Confirmation | None = SweepOptions.confirm,
    db: str | Path | None = None,
    gpus: list[int] | None = None,
    jobs: int | None = None,
    backend: str = "cuda",
    timeout: float = 10.0,
    observer=None,
    warm_start: Sequence[str | Path] = (),
    cmem: str | Mapping[str, Any] | None = None,
) -> TuneResult:
    """Tune a ``__global__`` kernel.

    ``arguments`` is ``"file.py:function"`` (called as ``function(sizes, seed)``, so the
    check runs on fresh inputs), or a list of numpy arrays and scalars. ``grid`` and
    ``block`` are expressions of the parameters and problem sizes; a templated
    ``kernel_name`` such as ``"sgemm<{BM}, {BN}>"`` is instantiated per config.
    ``reference`` is ``"file.py:function"`` (returns the expected outputs), a list of
    expected outputs, a reference config (dict), or ``"defaults"``. ``warm_start``: ksweep
    databases or recorded datasets of the same kernel to start the search from. ``cmem``:
    values of the module's ``__constant__`` / ``__device__`` variables, a dict of name ->
    numpy array or ``"file.py:function"`` (called as ``function(sizes, seed)``). ``compiler``:
    ``"nvcc"`` or ``"nvrtc"`` (as Kernel Tuner builds); ``flags``: its options (part of each
    build's key; default ``-O3`` for nvcc, none for NVRTC).
    """
    spec = kernel_tuning_spec(kernel_name, kernel_source, problem_size, arguments, tune_params, grid=grid,
                              block=block, smem=smem, restrictions=restrictions, outputs=outputs,
                              reference=reference, atol=atol, rtol=rtol, arch=arch, flags=flags, compiler=compiler,
                              timing=timing, timeout=timeout, cmem=cmem)
    summary, db_path = run_sweep(spec, db=db, options=SweepOptions(strategy=strategy, max_evals=max_evals, confirm=confirm,
                                                                    warm_start=tuple(map(str, warm_start))),
                                 gpus=gpus, jobs=jobs, observer=observer, kernel_backend=backend)
    return TuneResult(*_of_this_space(spec, db_path), db_path)


def _of_this_space(spec: Spec, db: Path) -> tuple[Result | None, tuple[Result, ...]]:
    """(best, results) of the configs of ``spec``'s space in ``db``: a database shared with
    an earlier call of other ``tune_params`` keeps that call's configs, which are not this
    one's to return (nor its best)."""
    from .space.space import Space

    spaces = {(s.name, v.name): Space.from_spec(spec, s.name, v.name)
              for s in spec.shape_list() for v in spec.variant_list()}
    def mine(r: Result) -> bool:
        space = spaces.get((r.shape, r.variant))
        return space is not None and set(r.params) == set(space.names) and dict(r.params) in space

    with Store(db) as store:
        found = standings.read(store)
    results = tuple(r for r in found.results if mine(r))
    # the store's best (confirmed, else ranked) of the configs of this space; one shape × variant
    bests = [b for s in found.values() if (b := s.best(within=mine)) is not None]
    return (bests[0] if len(bests) == 1 else None), results


def _saved_arrays(work: Path, stem: str, arrays: list, named: dict, extra: str = "") -> Path:
    """Save arrays (positional and named) as ``<stem>-<digest of their contents>.npz`` in ``work``."""
    import hashlib

    h = hashlib.sha256(extra.encode())
    for a in [*arrays, *named.values()]:
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    for k in named:
        h.update(k.encode())
    path = work / f"{stem}-{h.hexdigest()[:16]}.npz"
    if not path.exists():
        tmp = path.with_name(path.stem + f".tmp{os.getpid()}.npz")
        np.savez(tmp, *arrays, **named)
        os.replace(tmp, path)
    return path


def kernel_tuning_spec(
    kernel_name: str, kernel_source: str | Path, problem_size: Mapping[str, Any], arguments: str | Sequence[Any],
    tune_params: Mapping[str, Sequence[Any]], *, grid: Sequence[str], block: Sequence[str], smem: str | None = None,
    restrictions: Sequence[str] = (), outputs: Sequence[int] = (),
    reference: str | Sequence[Any] | Mapping[str, Any] | None = "defaults", atol: float = 1e-6, rtol: float = 1e-5,
    arch: str = DEFAULT_ARCH, flags: Sequence[str] | None = None, compiler: str = "nvcc",
    timing: Timing | None = None, timeout: float = 10.0, cmem: str | Mapping[str, Any] | None = None,
) -> Spec:
    """The kernel-mode spec ``tune_kernel`` sweeps (arrays given directly are saved in the
    workspace beside the source); ``reference=None``: outputs are not checked."""
    source = Path(kernel_source).resolve()
    if not source.is_file():
        raise SpecError(f"{kernel_source}: no such file", key="kernel_source")
    # "file.py:function" relative to the current folder (where the caller is, as Kernel Tuner
    # reads it), made absolute: the spec's root is the source's folder
    arguments, reference, cmem = (_from_here(v, key, source.parent) for v, key in
                                  ((arguments, "arguments"), (reference, "reference"), (cmem, "cmem")))
    root = source.parent
    work = workspace(root)
    work.mkdir(parents=True, exist_ok=True)
    # arrays given directly are saved under names of their contents: two calls with other
    # data never share (or overwrite) a file, and each file's digest keys the results
    if not isinstance(arguments, str):
        kinds = " ".join(type(a).__name__ for a in arguments)
        path = _saved_arrays(work, "arguments", [np.asarray(a) for a in arguments], {}, kinds)
        path.with_suffix(".kinds").write_text(kinds)
        arguments = f"npz:{path}"
    if cmem is not None and not isinstance(cmem, str):
        cmem = f"npz:{_saved_arrays(work, 'cmem', [], {str(k): np.ascontiguousarray(v) for k, v in dict(cmem).items()})}"
    if reference is not None and not isinstance(reference, (str, Mapping)):
        reference = f"npz:{_saved_arrays(work, 'reference', [np.asarray(r) for r in reference], {})}"
    # the [kernel] table's own loader checks what the caller gave, as it checks a spec file's
    table = {"source": source.name, "name": kernel_name, "args": arguments, "outputs": list(outputs),
             "grid": grid if isinstance(grid, str) else list(grid),
             "block": block if isinstance(block, str) else list(block),
             "reference": "defaults" if reference is None else (dict(reference) if isinstance(reference, Mapping)
                                                                else reference),
             "atol": atol, "rtol": rtol, "compiler": compiler, "timeout": timeout,
             **({"smem": smem} if smem else {}), **({"cmem": cmem} if cmem is not None else {}),
             **({"flags": list(flags)} if flags is not None else {})}
    kspec = replace(kernel_spec_from_dict(table, root, "tune_kernel"), timing=timing or Timing(),
                    reference=None if reference is None else table["reference"])  # None: outputs not checked
    spec = Spec(
        name=kernel_name.split("<")[0],
        params=tuple(Param(name, tuple(values)) for name, values in tune_params.items()),
        constraints=tuple(Constraint(f"restriction {i}", expr=parse(r), reason=r) for i, r in enumerate(restrictions)),
        shapes=(Shape("default", defines=dict(problem_size)),),
        limits=builtin_limits(arch), arch=arch, objective=Objective("ms", "min"), kernel=kspec,
        path=root / f"{source.stem}.kernel",
    )
    validate_names(spec)  # as a spec file's are when it loads: a typo in the launch or a restriction
    return spec


def _from_here(value, key: str, source_dir: Path):
    """A ``"file.py:function"`` reference made absolute and checked: a relative path is read
    from the current folder (as Kernel Tuner reads it), else from the kernel source's folder;
    anything else as it is."""
    if not isinstance(value, str) or ":" not in value or value.startswith("npz:") or value == "defaults":
        return value
    where, _, function = value.rpartition(":")
    for base in (Path.cwd(), source_dir):
        path = (base / Path(where).expanduser()).resolve()
        if path.is_file():
            return f"{path}:{function}"
    raise SpecError(f"{key} {value!r}: no such file {where}, in the current folder ({Path.cwd()}) or the "
                    f"kernel source's ({source_dir})", key=key)


# -- what a sweep will cost, and the effort presets (ksweep plan, ksweep run --effort) -----


@dataclass(frozen=True)
class Estimate:
    """Expected wall time of a spec's sweep on this machine: exhaustive, and per effort preset
    (the configs still to evaluate, and the confirmation's runs)."""

    cores: int
    gpus: int  # GPUs seen (0: none, the runs counted one at a time)
    sizes: tuple[int, ...]  # valid configs of each shape × variant
    cost: Any  # report.estimate.Cost, or None when nothing was measured
    warm: bool
    exhaustive_seconds: float | None
    presets: tuple[tuple[Any, float | None], ...]  # (strategies.effort.Effort, seconds)
    stored: tuple[int, ...] = ()  # results the database holds of each shape × variant (a sweep resumes them)

    @property
    def machine(self) -> str:
        """'16 cores, 2 GPUs' (what the figures are for)."""
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}" if self.gpus else "no GPU seen: one run at a time"
        return f"{self.cores} cores, {gpus}"

    @property
    def lower_bound(self) -> bool:
        """The figures count the builds alone (no run measured yet)."""
        return self.cost is not None and self.cost.lower_bound


def measured_cost(db: str | Path | None, warm_start: Sequence[str] = ()):
    """Build and run times in ``db`` (else in the --warm-start databases: the cost says so), or None."""
    from .warm.sources import is_database
    from .report.estimate import cost_of

    for path in [db, *warm_start]:
        if path is not None and Path(path).exists() and is_database(path):
            with Store(path, create=False) as store:
                # build times stand whatever the source
                cost = cost_of(store.results(superseded=True),
                               source="database" if path == db else f"--warm-start {Path(path).name}")
            if cost is not None:
                return cost
    return None


def _stored(db: str | Path | None, spec: Spec, groups: Sequence[tuple[str, str]]) -> tuple[int, ...]:
    """Current results (not PRUNED) of each (variant, shape) in ``db``: what a sweep resumes
    when its keys still match (another spec's database is refused, as the sweep refuses it)."""
    if db is None or not Path(db).exists():
        return tuple(0 for _ in groups)
    from .warm.sources import is_database
    from .sweep.driver import check_store_spec

    if not is_database(db):
        return tuple(0 for _ in groups)
    counts: dict[tuple[str, str], int] = {}
    with Store(db, create=False) as store:
        check_store_spec(store, spec)
        for r in store.results():
            if r.status is not Status.PRUNED:
                counts[(r.variant, r.shape)] = counts.get((r.variant, r.shape), 0) + 1
    return tuple(counts.get(g, 0) for g in groups)


def _sample_jobs(spec: Spec, count: int, seed: int):
    """The jobs of ``count`` random valid configs of the spec's first shape × variant that has
    any; the first k of them are the same whatever ``count`` (at least k)."""
    from .space.space import Space
    from .sweep.jobs import JobFactory

    spaces = ((shape, variant, Space.from_spec(spec, shape.name, variant.name))
              for variant in spec.variant_list() for shape in spec.shape_list())  # in the sweep's order
    found = next((s for s in spaces if s[2].size), None)
    if found is None:
        return []
    shape, variant, space = found
    factory = JobFactory(spec, shape, variant, space, mode_for(spec))
    rng = np.random.default_rng(seed)
    size = space.size
    picks: list[int] = []
    while len(picks) < min(count, size):  # distinct configs (a space may be too large for numpy's choice)
        i = int(rng.integers(size)) if size < 2**63 else int(rng.random() * size)
        if i not in picks:
            picks.append(i)
    return [factory.make(space[i]) for i in sorted(picks)]


def sample_builds(spec: Spec, count: int, seed: int = 0, cache: str | Path | None = None) -> list[float]:
    """Build ``count`` random valid configs of the spec's first shape × variant that has any
    (through the build cache, so the sweep reuses them) and return each one's build wall
    seconds (for a config the cache already held, what its build took when it was made)."""
    builder = make_builder(spec, cache and Path(cache))
    seconds = []
    for job in _sample_jobs(spec, count, seed):
        result = builder.build(job)
        took = getattr(result, "built_seconds", 0.0)  # none for a build that Ctrl-C stopped
        if took > 0:
            seconds.append(took)
    return seconds


def cached_sample_builds(spec: Spec, cache: str | Path | None = None, most: int = 64) -> list[float]:
    """The build seconds of ``plan --estimate``'s sample configs that the build cache holds
    (the same configs: the same seed), building nothing: ``run --effort`` estimates from them
    when its database has no build time yet."""
    builder = make_builder(spec, cache and Path(cache))
    seconds = []
    for job in _sample_jobs(spec, most, 0):
        meta = builder.cache.lookup(job.build_cache_key)
        if meta and meta.get("seconds", 0) > 0:
            seconds.append(float(meta["seconds"]))
    return seconds


def estimate(spec: Spec, *, db: str | Path | None = None, warm_start: Sequence[str] = (), cost=None,
             jobs: int | None = None, gpus: list[int] | None = None, shapes=None, variants=None,
             max_evals: int | None = None, confirm_runs: int | None = None, limited: bool = False,
             cached_samples: bool = False, cache: str | Path | None = None) -> Estimate:
    """The expected wall time of an exhaustive sweep and of each effort preset, on this
    machine (``jobs`` build jobs, the GPUs ``gpus`` selects), from ``cost`` or the times
    measured in ``db`` (or the --warm-start databases). The configs ``db`` already holds are
    not counted (a sweep resumes them); each shape × variant adds its confirmation's
    ``confirm_runs`` runs (at most the default --confirm's 5 leaders and the default, 3
    rounds). ``max_evals``: the user's budget, in place of the presets'; ``limited``: a time
    limit or patience may end the sweep (strategies.effort.choose); ``cached_samples``: with
    no ``cost`` and no build time measured, the ``plan --estimate`` sample builds the build
    cache ``cache`` holds (``cached_sample_builds``: nothing is built). With no run time
    measured the figures are the builds' alone (``Estimate.lower_bound``), and a preset does
    not choose a whole-space sweep on them."""
    from .verify.confirm import Confirmation
    from .report.estimate import confirmation_seconds, sample_cost, wall_seconds, with_runs
    from .space.plan import make_plan
    from .strategies.effort import EFFORTS, choose

    cores = jobs or spec.build.jobs or os.cpu_count() or 1
    n_gpus = len([g for g in select_gpus(detect_gpus(), gpus) if g.index is not None])  # 0: none seen
    plan = make_plan(spec)
    entries = [e for e in plan.entries
               if (not shapes or e.shape in shapes) and (not variants or e.variant in variants)]
    sizes = tuple(e.valid for e in entries)
    stored = _stored(db, spec, [(e.variant, e.shape) for e in entries])
    measured = measured_cost(db, warm_start)
    if cost is None and cached_samples and (measured is None or not measured.builds):
        seconds = cached_sample_builds(spec, cache)
        cost = sample_cost(seconds) if seconds else None
    cost = measured if cost is None else with_runs(cost, measured)
    warm = bool(warm_start)
    if confirm_runs is None:
        c = Confirmation()
        confirm_runs = (c.k + 1) * c.rounds

    def seconds(evals: list[int]) -> float:
        return sum(wall_seconds(max(0, n - done), cost, cores, n_gpus) + confirmation_seconds(confirm_runs, cost, n_gpus)
                   for n, done in zip(evals, stored))

    exhaustive = seconds(list(sizes)) if cost else None
    presets = []
    for name in EFFORTS:
        effort = choose(name, max(sizes, default=0), warm=warm, budget=max_evals, limited=limited,
                        exhaustive_seconds=None if cost is None or cost.lower_bound else exhaustive)
        if cost is None:
            presets.append((effort, None))
            continue
        presets.append((effort, seconds([s if effort.max_evals is None else min(s, effort.max_evals) for s in sizes])))
    return Estimate(cores, n_gpus, sizes, cost, warm, exhaustive, tuple(presets), stored)
