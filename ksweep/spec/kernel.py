"""The ``[kernel]`` section of a kernel-mode spec: what to launch, with which arguments,
checked against what. Every key is checked when the spec is loaded, as the rest of it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .context import Ctx
from .expr import Expr
from .pyref import find_python


@dataclass(frozen=True)
class Timing:
    warmup_ms: float = 10.0  # warm-up by time budget
    budget_ms: float = 40.0  # timed repetitions by time budget (at least min_reps)
    min_reps: int = 7
    max_reps: int = 2000
    flush_l2: bool = True
    energy_ms: float = 1000.0  # the energy phase's window, when the energy observer is on
    # stop timing once the median's 95% interval is within this fraction of it (0: time the whole budget)
    stop_ci: float = 0.01
    # in a sweep whose objective is ms: stop timing a config after RACE_REPS launches when even
    # the fastest of them took this many times the best median so far (0: never)
    race: float = 1.5


@dataclass(frozen=True)
class KernelSpec:
    source: Path
    name: str  # plain name, or a template such as "sgemm<{BM}, {BN}>"
    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    smem: Expr | None = None
    args: str = ""  # "file.py:function" -> function(sizes, seed) -> list of arrays/scalars
    # "file.py:function" -> function(sizes, seed) -> {symbol: array}: values copied into the
    # module's __constant__ / __device__ variables before launches (or "npz:PATH")
    cmem: str | None = None
    outputs: tuple[int, ...] = ()
    reference: Any = None  # "file.py:function" | "defaults" | {config} (a reference config)
    atol: float = 1e-6
    rtol: float = 1e-5
    flags: tuple[str, ...] = ("-O3",)  # the compiler's options (default_flags(compiler) when not given)
    defines: bool = True  # pass params as -D (off by default for templated names)
    timing: Timing = field(default_factory=Timing)
    timeout: float = 10.0  # seconds one evaluation may take before the worker is killed (HANG)
    seed: int = 0
    compiler: str = "nvcc"  # what builds the cubins: "nvcc" or "nvrtc" (build/nvrtc.py)
    # what the worker measures besides the time: "energy" (power and energy per launch through
    # NVML, kernel/worker.py); an energy objective turns it on (spec/objectives.py)
    observers: tuple[str, ...] = ()

    @property
    def templated(self) -> bool:
        return "<" in self.name

    @property
    def base_name(self) -> str:
        return self.name.split("<", 1)[0].strip().split("::")[-1]

    def instance(self, values: Mapping[str, Any]) -> str:
        """The kernel's name for one config: template placeholders filled."""
        return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), self.name)


_KEYS = {"source", "name", "grid", "block", "smem", "args", "cmem", "outputs", "reference", "atol", "rtol",
         "flags", "defines", "timing", "timeout", "seed", "compiler", "observers"}
COMPILERS = ("nvcc", "nvrtc")
OBSERVERS = ("energy",)


def default_flags(compiler: str) -> tuple[str, ...]:
    """The options a kernel is built with when none are given: nvcc's -O3 (NVRTC has no -O
    option: it optimizes fully by default)."""
    return ("-O3",) if compiler == "nvcc" else ()


_TIMING_KEYS = {"warmup_ms", "budget_ms", "min_reps", "max_reps", "flush_l2", "energy_ms", "stop_ci", "race"}
_ARRAYS = "npz:"  # arguments or reference outputs saved by ksweep.tune_kernel, not a function


def kernel_spec_from_dict(data: Mapping[str, Any], root: Path, label: str) -> KernelSpec:
    """The ``[kernel]`` table of a spec in folder ``root`` (file name ``label``, for messages)."""
    ctx = Ctx(label)
    ctx.keys(data, _KEYS, "kernel")
    for key in ("source", "name", "grid", "block", "args"):
        if key not in data:
            raise ctx.error(f"kernel.{key}", "is required")
    source_name = ctx.string(data["source"], "kernel.source")
    source = (root / source_name).resolve()
    if not source.is_file():
        raise ctx.error("kernel.source", f"'{source_name}' does not exist (paths are relative to the spec file)")
    name = ctx.string(data["name"], "kernel.name")

    def exprs(key: str) -> tuple[Expr, ...]:
        value = data[key]
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3:
            raise ctx.error(f"kernel.{key}", "expected 1 to 3 expressions (x, y, z)")
        return tuple(ctx.expr(v, f"kernel.{key}") for v in items)

    args = ctx.string(data["args"], "kernel.args")
    if not args.startswith(_ARRAYS):
        find_python(args, root, key="kernel.args", label=label, role="kernel args")
    cmem = None
    if "cmem" in data:
        cmem = ctx.string(data["cmem"], "kernel.cmem")
        if not cmem.startswith(_ARRAYS):
            find_python(cmem, root, key="kernel.cmem", label=label, role="kernel cmem")
    outputs = data.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                for i in outputs):
        raise ctx.error("kernel.outputs", f"expected a list of argument indices, e.g. [2], got {outputs!r}")
    reference = data.get("reference")
    if reference is None:
        raise ctx.error("kernel.reference",
                        "is required: \"file.py:function\", \"defaults\" or a table of parameter values")
    if isinstance(reference, str):
        if reference != "defaults" and not reference.startswith(_ARRAYS):
            find_python(reference, root, key="kernel.reference", label=label, role="kernel reference")
    elif not isinstance(reference, dict):
        raise ctx.error("kernel.reference", "expected \"file.py:function\", \"defaults\" or a table of parameter "
                        f"values, got {reference!r}")
    compiler = data.get("compiler", "nvcc")
    if compiler not in COMPILERS:
        raise ctx.error("kernel.compiler", f"expected \"nvcc\" or \"nvrtc\", got {compiler!r}")
    observers = ctx.str_list(data.get("observers", []), "kernel.observers")
    for name in observers:
        if name not in OBSERVERS:
            raise ctx.error("kernel.observers", f"unknown observer {name!r} (known: {', '.join(OBSERVERS)})")
    return KernelSpec(
        source=source, name=name, grid=exprs("grid"), block=exprs("block"),
        smem=ctx.expr(data["smem"], "kernel.smem") if "smem" in data else None,
        args=args, cmem=cmem, outputs=tuple(outputs), reference=reference,
        atol=float(ctx.at_least(data.get("atol", 1e-6), "kernel.atol", 0)),
        rtol=float(ctx.at_least(data.get("rtol", 1e-5), "kernel.rtol", 0)),
        flags=ctx.str_list(data["flags"], "kernel.flags") if "flags" in data else default_flags(compiler),
        defines=ctx.boolean(data.get("defines", "<" not in name), "kernel.defines"),
        timing=_timing(ctx, data.get("timing", {})),
        timeout=float(ctx.number(data.get("timeout", 10.0), "kernel.timeout")),
        seed=ctx.integer(data.get("seed", 0), "kernel.seed", minimum=0),
        compiler=compiler, observers=tuple(dict.fromkeys(observers)),
    )


def _timing(ctx: Ctx, table: Any) -> Timing:
    ctx.keys(table, _TIMING_KEYS, "kernel.timing")
    default = Timing()
    min_reps = ctx.integer(table.get("min_reps", default.min_reps), "kernel.timing.min_reps", minimum=1)
    max_reps = ctx.integer(table.get("max_reps", default.max_reps), "kernel.timing.max_reps", minimum=1)
    if max_reps < min_reps:
        raise ctx.error("kernel.timing.max_reps", f"{max_reps} is below min_reps ({min_reps})")
    return Timing(
        warmup_ms=float(ctx.at_least(table.get("warmup_ms", default.warmup_ms), "kernel.timing.warmup_ms", 0)),
        budget_ms=float(ctx.at_least(table.get("budget_ms", default.budget_ms), "kernel.timing.budget_ms", 0)),
        min_reps=min_reps, max_reps=max_reps,
        flush_l2=ctx.boolean(table.get("flush_l2", default.flush_l2), "kernel.timing.flush_l2"),
        energy_ms=float(ctx.number(table.get("energy_ms", default.energy_ms), "kernel.timing.energy_ms")),
        stop_ci=float(ctx.at_least(table.get("stop_ci", default.stop_ci), "kernel.timing.stop_ci", 0)),
        race=_race(ctx, table.get("race", default.race)),
    )


def valid_race(factor: float) -> bool:
    """timing.race's rule: 0 (never), or a finite factor of at least 1 (a config is behind when
    slower than the best by it)."""
    return factor == 0 or 1 <= factor < float("inf")


def _race(ctx: Ctx, value: Any) -> float:
    race = float(ctx.number(value, "kernel.timing.race", positive=False))
    if not valid_race(race):
        raise ctx.error("kernel.timing.race", f"{value!r}: give 0 (never stop early) or a factor of at least 1, "
                                              "e.g. 1.5")
    return race
