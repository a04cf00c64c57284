"""``ksweep.tune_kernel``: one call, like Kernel Tuner's, but with parallel builds, a
worker that survives faults and hangs, and honest timing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..result import Result
from ..spec.expr import parse
from ..spec.limits import builtin_limits
from ..spec.model import Constraint, Objective, Param, Shape, Spec
from ..status import Status
from ..store.sqlite import Store
from ..sweep.driver import SweepOptions
from ..sweep.local import run_sweep
from .spec import KernelSpec, Timing


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
    arch: str = "sm_90a",
    flags: Sequence[str] = ("-O3",),
    timing: Timing | None = None,
    strategy: str = "grid",
    max_evals: int | None = None,
    db: str | Path | None = None,
    gpus: list[int] | None = None,
    jobs: int | None = None,
    backend: str = "cuda",
    timeout: float = 10.0,
    observer=None,
) -> TuneResult:
    """Tune a ``__global__`` kernel.

    ``arguments`` is ``"file.py:function"`` (called as ``function(sizes, seed)``, so the
    check runs on fresh inputs), or a list of numpy arrays and scalars. ``grid`` and
    ``block`` are expressions of the parameters and problem sizes; a templated
    ``kernel_name`` such as ``"sgemm<{BM}, {BN}>"`` is instantiated per config.
    ``reference`` is ``"file.py:function"`` (returns the expected outputs), a list of
    expected outputs, a reference config (dict), or ``"defaults"``.
    """
    source = Path(kernel_source).resolve()
    root = source.parent
    work = root / ".ksweep"
    work.mkdir(parents=True, exist_ok=True)
    if not isinstance(arguments, str):
        path = work / "arguments.npz"
        np.savez(path, *[np.asarray(a) for a in arguments])
        kinds = [type(a).__name__ for a in arguments]
        (work / "arguments.kinds").write_text(" ".join(kinds))
        arguments = f"npz:{path}"
    if not isinstance(reference, (str, Mapping)):
        path = work / "reference.npz"
        np.savez(path, *[np.asarray(r) for r in reference])
        reference = f"npz:{path}"
    kspec = KernelSpec(
        source=source, name=kernel_name, grid=tuple(parse(g) for g in grid),
        block=tuple(parse(b) for b in block), smem=parse(smem) if smem else None, args=arguments,
        outputs=tuple(outputs), reference=dict(reference) if isinstance(reference, Mapping) else reference,
        atol=atol, rtol=rtol, flags=tuple(flags), defines="<" not in kernel_name,
        timing=timing or Timing(), timeout=timeout,
    )
    spec = Spec(
        name=kernel_name.split("<")[0],
        params=tuple(Param(name, tuple(values)) for name, values in tune_params.items()),
        constraints=tuple(Constraint(f"restriction {i}", expr=parse(r), reason=r) for i, r in enumerate(restrictions)),
        shapes=(Shape("default", defines=dict(problem_size)),),
        limits=builtin_limits(arch), arch=arch, objective=Objective("ms", "min"), kernel=kspec,
        path=root / f"{source.stem}.kernel",
    )
    summary, db_path = run_sweep(spec, db=db, options=SweepOptions(strategy=strategy, max_evals=max_evals),
                                 gpus=gpus, jobs=jobs, observer=observer, kernel_backend=backend)
    with Store(db_path) as store:
        results = tuple(store.results())
    ok = [r for r in results if r.status is Status.OK]
    best = min(ok, key=lambda r: r.metrics["ms"]) if ok else None
    return TuneResult(best, results, db_path)
