"""Kernel mode's front door: ``ksweep.tune_kernel`` tunes a bare ``__global__`` kernel,
sweeping the spec ``kernel_tuning_spec`` makes of its arguments (Kernel Tuner's keywords are
``ksweep.kt``'s, above this layer)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import SpecError
from ..gpu.limits import DEFAULT_ARCH, builtin_limits
from ..result import Result
from ..spec.expr import parse
from ..spec.kernel import Timing, kernel_spec_from_dict
from ..spec.load import validate_names
from ..spec.model import Constraint, Objective, Param, Shape, Spec
from ..store import standings
from ..store.sqlite import Store
from ..sweep.options import SweepOptions
from ..verify.confirm import Confirmation
from ..workspace import workspace
from .sweep import run_sweep


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
    return TuneResult(*of_this_space(spec, db_path), db_path)


def of_this_space(spec: Spec, db: Path) -> tuple[Result | None, tuple[Result, ...]]:
    """(best, results) of the configs of ``spec``'s space in ``db``: a database shared with
    an earlier call of other ``tune_params`` keeps that call's configs, which are not this
    one's to return (nor its best)."""
    from ..space.space import Space

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
    """The kernel-mode spec ``app.kernel.tune_kernel`` sweeps (arrays given directly are saved
    in the workspace beside the source); ``reference=None``: outputs are not checked."""
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
