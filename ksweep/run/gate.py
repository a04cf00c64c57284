"""A start gate: program runs on one host start at least ``gap`` seconds apart.

A CUDA program spends its first few hundred milliseconds in the driver (``cuInit``, the
context) and its last ones tearing the context down, and on the machines we measured
those phases of two processes serialise even when each has a GPU of its own: two runs
started together both take longer, and they stay in step run after run. Spacing the
starts puts the runs of different GPUs out of phase, so that one's start-up overlaps
the others' kernels (numbers: docs/benchmarks.md, "Runs on several GPUs of one host").

The gate is host-wide: an ``flock``-ed file under the temporary directory holds the time
of the last start, so the run slots of one ``ksweep run``, the GPU workers of a local
Dask cluster and other sweeps of the same user on the same host all take turns.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

DEFAULT_GAP = 0.25  # seconds; see the module docstring


def default_path() -> Path:
    return Path(tempfile.gettempdir()) / f"ksweep-start-gate-{os.getuid()}"


def auto_gap(slots_per_host: int) -> float:
    """The gap when the user chose none: only hosts that start runs on several GPUs need one."""
    return DEFAULT_GAP if slots_per_host > 1 else 0.0


class StartGate:
    """``wait()`` returns when a start is allowed: ``gap`` seconds after the previous one on this host."""

    def __init__(self, gap: float, path: str | Path | None = None):
        if gap < 0:
            raise ValueError(f"start gap must be >= 0, not {gap}")
        self.gap = gap
        self.path = Path(path) if path is not None else default_path()

    def wait(self) -> float | None:
        """Block until a start is allowed; returns the start time it recorded (``time.monotonic``),
        or None without a gate (gap 0)."""
        if self.gap <= 0:
            return None
        # flock conflicts between separate open()s even in one process, so threads take turns too
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:  # e.g. another user's file of that name: spacing starts is not worth failing a run
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # a file system without flock
                return None
            try:
                last = float(os.pread(fd, 64, 0).strip() or b"-inf")
            except ValueError:  # an unreadable stamp: as if there were none
                last = float("-inf")
            # CLOCK_MONOTONIC: one clock for every process of the host (a stamp of an earlier
            # boot may lie in the future: never wait more than one gap)
            waited = min(self.gap, max(0.0, last + self.gap - time.monotonic()))
            if waited > 0:
                time.sleep(waited)
            stamp = f"{time.monotonic():.6f}"
            os.pwrite(fd, stamp.encode().ljust(64), 0)
            return float(stamp)
        finally:
            os.close(fd)  # releases the lock
