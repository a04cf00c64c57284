"""The record of one evaluated (or pruned) config: what every stage after the run sees."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from .status import Status

# Milliseconds per unit of the metrics that measure a duration, by their name or its suffix.
_MS_PER_UNIT = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3, "sec": 1e3, "secs": 1e3, "seconds": 1e3}


def time_unit_ms(metric: str) -> float | None:
    """Milliseconds per unit of a metric that measures a duration (whatever the case): ms, us,
    ns, s, sec, secs, seconds, or a name ending in one after an underscore (``kernel_us``);
    ``time`` and ``time_*`` are taken as milliseconds. None for any other metric."""
    k = metric.lower()
    unit = k if k in _MS_PER_UNIT else next((u for u in _MS_PER_UNIT if k.endswith("_" + u)), None)
    if unit is not None:
        return _MS_PER_UNIT[unit]
    return 1.0 if k == "time" or k.startswith("time_") else None


@dataclass(frozen=True)
class Result:
    variant: str
    shape: str
    params: Mapping[str, Any]
    status: Status
    message: str = ""
    # the run's outputs passed a check against an expected value or the reference (verify/checks.judge);
    # False without a check, when the reference failed, and in databases written before schema 3
    verified: bool = False
    derived: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, float] = field(default_factory=dict)
    regs: int | None = None
    spills: int | None = None
    smem: int | None = None
    kernels: tuple = ()
    build_argv: tuple[str, ...] = ()
    cache_key: str | None = None
    cached: bool = False
    phase: str | None = None
    gpu_index: int | None = None
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    driver: str | None = None
    build_seconds: float | None = None
    run_seconds: float | None = None
    started: float | None = None  # when its run began (wall clock); None when it did not run
    finished: float | None = None
    deps: tuple = ()  # (path, digest) of every file its build read beyond the listed sources
    # the GPU around the run (NVML: clocks, temperature, power, throttle reasons; run/gpu_state.py)
    gpu_state: Mapping[str, Any] = field(default_factory=dict)
    revision: str | None = None  # the source revision it was measured on (build/revision.py)
    code: str | None = None  # the digest of the program its build made (elf/code.py; None: not known)
    # the config id of the config whose run it shares (its build made the same program, and its run
    # command is the same): measured once, for both; None: measured on its own
    same_as: str | None = None

    @property
    def compiler(self) -> str | None:
        """What built it, read from the stored command: ``nvrtc`` for kernel mode's NVRTC
        command (``python -m ksweep.build.nvrtc``), else the program the command runs
        (``nvcc``, ``gcc``…); None when nothing was built."""
        argv = self.build_argv
        if len(argv) >= 3 and argv[1] == "-m" and argv[2] == "ksweep.build.nvrtc":
            return "nvrtc"
        return argv[0].rsplit("/", 1)[-1] if argv else None

    def value(self, metric: str) -> float | None:
        """The objective's value, only for a config that passed everything (and a finite number:
        a database written before non-finite values were refused may hold NaN)."""
        if self.status is not Status.OK:
            return None
        v = self.metrics.get(metric)
        try:
            v = float(v) if v is not None else None
        except (TypeError, ValueError):
            return None
        return v if v is not None and math.isfinite(v) else None


@dataclass(frozen=True)
class Measurement:
    """One confirmation run of a config (ksweep/verify/confirm.py): its round, how it ended and
    the objective's value when it ended OK."""

    variant: str
    shape: str
    params: Mapping[str, Any]
    result_key: str  # the result key it was measured under: another experiment's never count
    round: int
    status: Status
    value: float | None = None
    message: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    gpu_state: Mapping[str, Any] = field(default_factory=dict)
    finished: float | None = None


@dataclass(frozen=True)
class Hardening:
    """What the hardening of a leader found (ksweep/sweep/hardening.py), under the result key it
    was measured with: ``kind`` "sanitizer" (compute-sanitizer's tools, ``tools``: each with what
    it said; ``verdict`` clean, unsafe or incomplete), "inputs" (kernel mode's further inputs:
    passed, failed or skipped) or "determinism" (deterministic or nondeterministic)."""

    variant: str
    shape: str
    params: Mapping[str, Any]
    result_key: str | None
    kind: str
    verdict: str
    detail: str = ""
    tools: Mapping[str, str] = field(default_factory=dict)
    finished: float | None = None
