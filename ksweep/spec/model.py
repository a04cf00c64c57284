"""Frozen, validated objects that describe a sweep.

They are built by ``ksweep.spec.load`` from TOML, or directly from Python. Nothing here
does I/O; a ``Spec`` gives the ``SpaceParts`` of each shape × variant, of which
``ksweep.space`` makes the parameter ``Space``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from ..gpu.limits import limit_names
from .expr import Expr

if TYPE_CHECKING:
    from .kernel import KernelSpec
    from .pyref import PyFunction


def _frozen_map(m: Mapping | None) -> Mapping:
    return MappingProxyType(dict(m or {}))


def define_value(value: Any) -> str:
    """How a value is written after ``-DNAME=``: booleans as 1/0, the rest as text."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


@dataclass(frozen=True)
class Param:
    """One tunable: Tier 1 (``params``) or Tier 2 (``switches``).

    A ``flag`` switch takes the values (False, True) and is passed as a bare ``-DNAME``
    when true and not at all when false. ``macro`` is the name the compiler sees when it
    differs from the parameter's (``define = "K10_BM"``, or ``[sweep] define_prefix``), so
    that a parameter called ``BM`` never becomes a macro that rewrites the user's own
    identifiers (``template <int BM>``).
    """

    name: str
    values: tuple
    default: Any = None
    tier: int = 1
    flag: bool = False
    define: bool = True
    macro: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))
        if self.default is None and self.values:
            object.__setattr__(self, "default", self.values[0])

    @property
    def define_name(self) -> str:
        return self.macro or self.name

    def defines(self, value: Any) -> tuple[str, ...]:
        if not self.define:
            return ()
        if self.flag:
            return (f"-D{self.define_name}",) if value else ()
        return (f"-D{self.define_name}={define_value(value)}",)


@dataclass(frozen=True)
class Derived:
    """A value computed, in spec order, from parameters, constants and earlier derived values."""

    name: str
    expr: Expr
    define: bool = False
    shapes: frozenset[str] | None = None
    variants: frozenset[str] | None = None
    macro: str | None = None  # the compiler's name for it, when not ``name`` (see Param)

    @property
    def define_name(self) -> str:
        return self.macro or self.name


@dataclass(frozen=True)
class Constraint:
    """A rule every valid config satisfies: an expression, or a Python function."""

    name: str
    expr: Expr | None = None
    function: PyFunction | None = None
    reason: str | None = None
    uses: frozenset[str] | None = None  # names a config-taking Python function reads
    shapes: frozenset[str] | None = None
    variants: frozenset[str] | None = None

    def applies(self, shape: str | None, variant: str | None) -> bool:
        return (self.shapes is None or shape in self.shapes) and (
            self.variants is None or variant in self.variants
        )


@dataclass(frozen=True)
class Shape:
    """A named problem shape: defines (visible to expressions), run arguments, extra params."""

    name: str
    defines: Mapping[str, Any] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    params: tuple[Param, ...] = ()
    constants: Mapping[str, Any] = field(default_factory=dict)
    flops: Expr | None = None  # this shape's [physics] flops, when it differs
    bytes: Expr | None = None

    def __post_init__(self):
        object.__setattr__(self, "defines", _frozen_map(self.defines))
        object.__setattr__(self, "constants", _frozen_map(self.constants))
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "params", tuple(self.params))


@dataclass(frozen=True)
class Variant:
    """A Tier-3 alternative: own sources, build command and parameter overrides; swept on its own."""

    name: str
    sources: tuple[str, ...] | None = None
    build_command: tuple[str, ...] | None = None
    run_command: tuple[str, ...] | None = None
    params: tuple[Param, ...] = ()
    constants: Mapping[str, Any] = field(default_factory=dict)
    defines: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "constants", _frozen_map(self.constants))
        object.__setattr__(self, "defines", _frozen_map(self.defines))
        object.__setattr__(self, "params", tuple(self.params))


BASE_VARIANT = Variant(name="base")
NO_SHAPE = Shape(name="default")


@dataclass(frozen=True)
class Harness:
    """A program built once per shape × variant instead of once per config (``[build.harness]``):
    e.g. the host code of a harness that loads each config's cubin, or an object file each
    config links. ``{harness}`` names it in the build and run commands."""

    command: tuple[str, ...]
    sources: tuple[str, ...] | None = None  # None: the configs' sources
    output: str = "harness"  # its file name, e.g. "harness.o" for an object nvcc links
    timeout: float | None = None  # seconds; None: [build] timeout

    def __post_init__(self):
        object.__setattr__(self, "command", tuple(self.command))
        if self.sources is not None:
            object.__setattr__(self, "sources", tuple(self.sources))


@dataclass(frozen=True)
class Build:
    """How to build one config: an argv template, never a shell string."""

    command: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    harness: Harness | None = None
    timeout: float = 600.0
    jobs: int | None = None  # None: all cores
    env: Mapping[str, str] = field(default_factory=dict)
    allow_spills: bool = False
    max_registers: int | None = None  # None: the target's regs_per_thread
    kernels: str | None = None  # regex (mangled or demangled names) of the kernels judged and shown

    def __post_init__(self):
        object.__setattr__(self, "command", tuple(self.command))
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "env", _frozen_map(self.env))


@dataclass(frozen=True)
class Run:
    """How to run one built config."""

    command: tuple[str, ...] = ("{binary}",)
    timeout: float = 30.0
    env: Mapping[str, str] = field(default_factory=dict)
    output_limit: int = 4 * 1024 * 1024  # bytes kept of stdout and of stderr each
    start_gap: float | None = None  # seconds between run starts on one host; None: auto (run/gate.py)
    persistent: bool = False  # run every config in one host process per GPU (run/host.py)

    def __post_init__(self):
        object.__setattr__(self, "command", tuple(self.command))
        object.__setattr__(self, "env", _frozen_map(self.env))


@dataclass(frozen=True)
class Check:
    """Correctness check of the checked metrics: an expected value, or the defaults config."""

    keys: tuple[str, ...] = ("checksum",)
    expected: Mapping[str, float] = field(default_factory=dict)
    reference: str | None = None  # "defaults"
    rtol: float = 1e-5
    atol: float = 0.0
    max_keys: Mapping[str, float] = field(default_factory=dict)  # metric must be <= bound

    def __post_init__(self):
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "expected", _frozen_map(self.expected))
        object.__setattr__(self, "max_keys", _frozen_map(self.max_keys))

    @property
    def active(self) -> bool:
        return bool(self.expected) or self.reference is not None or bool(self.max_keys)


@dataclass(frozen=True)
class Physics:
    """``[physics]``: the work of one run, for the physics gate (gpu/physics.py).

    ``flops`` and ``bytes`` are expressions over the config's names (a shape may give its
    own); ``time`` the @@RESULT metric holding the run's time, in ``unit``; ``dtype`` the
    data type whose peak applies; ``margin`` how far below the floor a time may fall
    before it is impossible; ``peak_tflops``/``bandwidth_gbs`` override the GPU table."""

    flops: Expr | None = None
    bytes: Expr | None = None
    dtype: str = "fp32"
    time: str = "ms"
    unit: str = "ms"
    margin: float = 0.10
    peak_tflops: float | None = None
    bandwidth_gbs: float | None = None


@dataclass(frozen=True)
class Profile:
    """``[profile]``: what ``ksweep explain`` and ``ksweep profile`` need to know of the tuned
    kernel in program mode (kernel mode knows its launch).

    ``threads`` and ``smem``: expressions for the threads per block and the dynamic shared
    memory (bytes) of its launch, for the theoretical occupancy; ``opt_in``: it raises its
    dynamic shared-memory limit; ``kernel``: a regular expression of the kernel names
    Nsight Compute profiles (default: ``[build] kernels``); ``launch_skip``/``launch_count``:
    which of its launches; ``metrics``: the metric set (``default``, ``full``, or a list of
    Nsight Compute metric names, ``regex:`` ones too); ``timeout``: seconds one profiled
    run may take."""

    threads: Expr | None = None
    smem: Expr | None = None
    opt_in: bool = True
    kernel: str | None = None
    launch_skip: int = 0
    launch_count: int = 1
    metrics: str | tuple[str, ...] = "default"
    timeout: float = 600.0


SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")  # compute-sanitizer's, in the order run
SPECIAL_INPUTS = ("zeros", "ones", "large", "nan", "inf")  # kernel mode's further inputs (docs/kernel_mode.md)


@dataclass(frozen=True)
class Harden:
    """``[harden]``: the checks of the confirmed leaders before BEST is named (sweep/hardening.py).

    ``enabled``: run compute-sanitizer's ``tools`` on each leader (``ksweep run --no-harden``:
    false), each tool in a run of its own limited to ``timeout`` seconds (None: 100 times the
    config's measured run, at least 120 s); ``deterministic``: a config whose outputs differ from
    one run to the next may not be BEST (``--deterministic``); ``special``: kernel mode's
    further inputs where the kernel's contract allows them (NaN and Inf only when listed);
    ``edge``: kernel mode's edge size, shape defines (or constants) that replace each shape's
    (e.g. ``{ N = 4099 }``): the default config and the leaders built for it and checked on it;
    ``sizes``: kernel mode's sizes for the sanitizers, shape defines (or constants) that replace
    each shape's (e.g. ``{ N = 1024 }``): each leader built for them and run there under each
    tool (racecheck slows a kernel 100-1000 times: a large shape's launch may not finish), its
    further inputs still checked at the shape's own sizes;
    ``budget``: seconds the hardening of a shape × variant may take in a sweep (None: 15% of
    what its search and confirmation took, at least 60 s); what it leaves is hardened by the
    next run or ``ksweep harden``; ``jobs``: sanitizer runs at once, each tool of a leader a
    process of its own (None: half the host's cores, 1 to 8)."""

    enabled: bool = True
    tools: tuple[str, ...] = SANITIZER_TOOLS
    timeout: float | None = None
    deterministic: bool = False
    special: tuple[str, ...] = ("zeros", "ones", "large")
    edge: Mapping[str, Any] = field(default_factory=dict)
    sizes: Mapping[str, Any] = field(default_factory=dict)  # kernel mode: the sanitizers' sizes
    budget: float | None = None  # seconds per shape × variant (None: a share of its sweep's, at least 60 s)
    jobs: int | None = None  # sanitizer runs at once (None: half the host's cores, 1 to 8)

    def __post_init__(self):
        object.__setattr__(self, "edge", _frozen_map(self.edge))
        object.__setattr__(self, "sizes", _frozen_map(self.sizes))


@dataclass(frozen=True)
class Objective:
    metric: str = "ms"
    direction: str = "min"  # or "max"

    def better(self, a: float, b: float) -> bool:
        return a < b if self.direction == "min" else a > b


@dataclass(frozen=True)
class SpaceParts:
    """Everything the parameter space of one shape × variant is made of."""

    params: tuple[Param, ...]
    derived: tuple[Derived, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)  # constants, limits, defines: name -> value
    label: str = "<spec>"  # the spec file's name, for messages

    def __post_init__(self):
        for name in ("params", "derived", "constraints"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "fixed", _frozen_map(self.fixed))


@dataclass(frozen=True)
class Spec:
    """A whole sweep: what to vary, what is valid, and how to build, run and check it."""

    name: str = "sweep"
    params: tuple[Param, ...] = ()
    derived: tuple[Derived, ...] = ()
    constants: Mapping[str, Any] = field(default_factory=dict)
    constraints: tuple[Constraint, ...] = ()
    shapes: tuple[Shape, ...] = ()
    variants: tuple[Variant, ...] = ()
    limits: Mapping[str, int] = field(default_factory=dict)
    arch: str | None = None
    build: Build = field(default_factory=Build)
    run: Run = field(default_factory=Run)
    check: Check = field(default_factory=Check)
    objective: Objective = field(default_factory=Objective)  # the one that ranks (the first of several)
    # a multi-objective sweep's objectives, the ranking one first (spec/objectives.py); () for one
    objectives: tuple[Objective, ...] = ()
    path: Path | None = None  # the spec file, when loaded from one
    folder: Path | None = None  # without a file: the folder it was made in (its relative paths' base)
    kernel: KernelSpec | None = None  # kernel mode ([kernel]): spec/kernel.py
    physics: Physics | None = None  # [physics]: the physics gate
    profile: Profile = field(default_factory=Profile)  # [profile]: launch facts and Nsight Compute settings
    harden: Harden = field(default_factory=Harden)  # [harden]: sanitizers, determinism, further inputs
    define_prefix: str = ""  # [sweep] define_prefix: put before every -D name ksweep writes
    description: str = ""  # [sweep] description: shown by plan and kept in the store
    # one-line problems that do not stop a sweep ("spec.toml: build.command: ..."); the CLI
    # prints each as "ksweep: warning: ..." on stderr
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):
        for name in ("params", "derived", "constraints", "shapes", "variants", "warnings", "objectives"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "constants", _frozen_map(self.constants))
        object.__setattr__(self, "limits", _frozen_map(self.limits))
        if self.objectives and self.objectives[0] != self.objective:  # one truth: the first of several ranks
            raise ValueError(f"objectives[0] ({self.objectives[0]}) is not the ranking objective ({self.objective})")

    @property
    def root(self) -> Path:
        """The folder that relative paths of the spec are relative to."""
        return self.path.parent if self.path else (self.folder or Path.cwd())

    @property
    def label(self) -> str:
        return str(self.path.name) if self.path else "<spec>"

    def objective_list(self) -> tuple[Objective, ...]:
        """Every objective, the ranking one first (one, unless a multi-objective sweep)."""
        return self.objectives or (self.objective,)

    def shape_list(self) -> tuple[Shape, ...]:
        return self.shapes or (NO_SHAPE,)

    def variant_list(self) -> tuple[Variant, ...]:
        return self.variants or (BASE_VARIANT,)

    def shape(self, name: str | None) -> Shape:
        for s in self.shape_list():
            if name is None or s.name == name:
                return s
        raise KeyError(name)

    def variant(self, name: str | None) -> Variant:
        for v in self.variant_list():
            if name is None or v.name == name:
                return v
        raise KeyError(name)

    def effective_params(self, shape: Shape, variant: Variant) -> tuple[Param, ...]:
        """The params of one shape × variant: base, then the variant's, then the shape's overrides."""
        merged: dict[str, Param] = {p.name: p for p in self.params}
        for p in (*variant.params, *shape.params):
            merged[p.name] = p
        return tuple(merged.values())

    def param_names(self) -> tuple[str, ...]:
        """Every parameter name of any shape × variant, in first-seen order."""
        return tuple(dict.fromkeys(p.name for s in self.shape_list() for v in self.variant_list()
                                   for p in self.effective_params(s, v)))

    def fixed_names(self, shape: Shape, variant: Variant) -> dict[str, Any]:
        """Every non-parameter name expressions see: limits, constants, shape defines."""
        names = limit_names(self.limits)
        names.update(self.constants)
        names.update(variant.constants)
        names.update(variant.defines)
        names.update(shape.constants)
        names.update(shape.defines)
        return names

    def space_parts(self, shape: Shape, variant: Variant) -> SpaceParts:
        """Everything the Space of one shape × variant is made of (``Space.from_spec``)."""
        return SpaceParts(
            params=self.effective_params(shape, variant),
            derived=tuple(d for d in self.derived if _applies(d, shape.name, variant.name)),
            constraints=tuple(c for c in self.constraints if c.applies(shape.name, variant.name)),
            fixed=self.fixed_names(shape, variant),
            label=self.label,
        )


def _applies(d: Derived, shape: str, variant: str) -> bool:
    return (d.shapes is None or shape in d.shapes) and (d.variants is None or variant in d.variants)
