"""The ``[kernel]`` section: what to launch, with which arguments, checked against what."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ExprError, SpecError
from ..spec.expr import Expr, parse


@dataclass(frozen=True)
class Timing:
    warmup_ms: float = 10.0  # warm-up by time budget
    budget_ms: float = 40.0  # timed repetitions by time budget (at least min_reps)
    min_reps: int = 7
    max_reps: int = 2000
    flush_l2: bool = True


@dataclass(frozen=True)
class KernelSpec:
    source: Path
    name: str  # plain name, or a template such as "sgemm<{BM}, {BN}>"
    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    smem: Expr | None = None
    args: str = ""  # "file.py:function" -> function(sizes, seed) -> list of arrays/scalars
    outputs: tuple[int, ...] = ()
    reference: Any = None  # "file.py:function" | "defaults" | {config} (a reference config)
    atol: float = 1e-6
    rtol: float = 1e-5
    flags: tuple[str, ...] = ("-O3",)
    defines: bool = True  # pass params as -D (off by default for templated names)
    timing: Timing = field(default_factory=Timing)
    timeout: float = 10.0  # seconds one evaluation may take before the worker is killed (HANG)
    seed: int = 0

    @property
    def templated(self) -> bool:
        return "<" in self.name

    @property
    def base_name(self) -> str:
        return self.name.split("<", 1)[0].strip().split("::")[-1]

    def instance(self, values: Mapping[str, Any]) -> str:
        """The kernel's name for one config: template placeholders filled."""
        return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), self.name)


_KEYS = {"source", "name", "grid", "block", "smem", "args", "outputs", "reference", "atol", "rtol",
         "flags", "defines", "timing", "timeout", "seed"}
_TIMING_KEYS = {"warmup_ms", "budget_ms", "min_reps", "max_reps", "flush_l2"}


def kernel_spec_from_dict(data: Mapping[str, Any], root: Path, label: str) -> KernelSpec:
    def err(key: str, problem: str) -> SpecError:
        return SpecError(problem, path=label, key=f"kernel.{key}" if key else "kernel")

    for key in data:
        if key not in _KEYS:
            raise err(key, f"unknown key (allowed: {', '.join(sorted(_KEYS))})")
    for key in ("source", "name", "grid", "block", "args"):
        if key not in data:
            raise err(key, "is required")
    source = (root / str(data["source"])).resolve()
    if not source.is_file():
        raise err("source", f"'{data['source']}' does not exist")

    def exprs(key: str) -> tuple[Expr, ...]:
        value = data[key]
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3:
            raise err(key, "expected 1 to 3 expressions (x, y, z)")
        try:
            return tuple(parse(v) for v in items)
        except ExprError as exc:
            raise err(key, str(exc)) from None

    timing = data.get("timing", {})
    for key in timing:
        if key not in _TIMING_KEYS:
            raise err(f"timing.{key}", f"unknown key (allowed: {', '.join(sorted(_TIMING_KEYS))})")
    outputs = data.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(i, int) for i in outputs):
        raise err("outputs", "expected a list of argument indices, e.g. [2]")
    reference = data.get("reference")
    if reference is None:
        raise err("reference", "is required: \"file.py:function\", \"defaults\" or a table of parameter values")
    name = str(data["name"])
    try:
        smem = parse(data["smem"]) if "smem" in data else None
    except ExprError as exc:
        raise err("smem", str(exc)) from None
    return KernelSpec(
        source=source, name=name, grid=exprs("grid"), block=exprs("block"), smem=smem,
        args=str(data["args"]), outputs=tuple(outputs), reference=reference,
        atol=float(data.get("atol", 1e-6)), rtol=float(data.get("rtol", 1e-5)),
        flags=tuple(str(f) for f in data.get("flags", ["-O3"])),
        defines=bool(data.get("defines", "<" not in name)),
        timing=Timing(**timing), timeout=float(data.get("timeout", 10.0)), seed=int(data.get("seed", 0)),
    )
