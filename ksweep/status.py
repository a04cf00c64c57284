"""Outcome of one config: the status enum shared by every stage."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    """What happened to a config. The names are exactly those printed in reports."""

    OK = "OK"
    PRUNED = "PRUNED"  # a known constraint rejected it before building
    COMPILE_ERROR = "COMPILE_ERROR"
    REGS_LIMIT = "REGS_LIMIT"
    SPILLS = "SPILLS"
    HANG = "HANG"
    CRASH = "CRASH"
    CUDA_ERROR = "CUDA_ERROR"
    RUN_ERROR = "RUN_ERROR"
    NO_RESULT = "NO_RESULT"
    CHECKSUM_MISMATCH = "CHECKSUM_MISMATCH"
    IMPOSSIBLE = "IMPOSSIBLE"  # faster than the hardware allows ([physics]): never ranked
    UNSAFE = "UNSAFE"  # a sanitizer found a fault in it when the leaders were hardened: never ranked

    def __str__(self) -> str:
        return self.value

    @property
    def ok(self) -> bool:
        return self is Status.OK

    @property
    def build_failure(self) -> bool:
        return self in (Status.COMPILE_ERROR, Status.REGS_LIMIT, Status.SPILLS)

    @property
    def is_failure(self) -> bool:
        """A failure found by building or running: a hidden constraint a search learns from."""
        return self not in (Status.OK, Status.PRUNED)


# Report order of failures: closest to success first.
FAILURE_ORDER = [
    Status.UNSAFE, Status.IMPOSSIBLE, Status.CHECKSUM_MISMATCH, Status.NO_RESULT, Status.RUN_ERROR, Status.CUDA_ERROR,
    Status.CRASH, Status.HANG, Status.SPILLS, Status.REGS_LIMIT, Status.COMPILE_ERROR, Status.PRUNED,
]


@dataclass(frozen=True)
class Stopped:
    """What a build or a run returns when Ctrl-C (``process.kill_all``) came first.

    Not a result and not a status: it is never judged, stored or told to a strategy; the
    sweep driver stops on it."""


STOPPED = Stopped()
