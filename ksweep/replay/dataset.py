"""A recorded brute-force tuning run: every config of a space and what it measured.

Configs are held as rows of value indices (one column per parameter, an index into that
parameter's ordered value list), so strategies and statistics work on numpy arrays.
A failed config has no value (NaN in ``values``) and a failure status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..spec.model import Param
from ..status import Status


@dataclass(frozen=True)
class Dataset:
    """Recorded results of one kernel on one GPU (read-only arrays)."""

    name: str
    format: str  # "kernel_tuner" or "t4"
    params: tuple[Param, ...]
    rows: np.ndarray  # (n, len(params)) value indices
    values: np.ndarray  # (n,) the objective to minimise (ms); NaN where the config failed
    statuses: tuple[Status, ...]
    device: str = ""
    kernel: str = ""
    # the repeated measurements behind each value (Kernel Tuner's "times", T4's runtimes), an
    # empty array where none were recorded; None: the file recorded none at all
    repeats: tuple[np.ndarray, ...] | None = None

    def __post_init__(self):
        for a in (self.rows, self.values, *(self.repeats or ())):
            a.setflags(write=False)
        if len(self.rows) != len(self.values) or len(self.values) != len(self.statuses):
            raise ValueError("rows, values and statuses differ in length")
        if self.repeats is not None and len(self.repeats) != len(self.values):
            raise ValueError("repeats and values differ in length")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def ok(self) -> np.ndarray:
        return ~np.isnan(self.values)

    @property
    def optimum(self) -> float:
        """The best recorded value (the smallest time)."""
        return float(np.nanmin(self.values))

    @property
    def failures(self) -> int:
        return int(np.isnan(self.values).sum())

    def config(self, i: int) -> dict[str, Any]:
        return {p.name: p.values[j] for p, j in zip(self.params, self.rows[i])}

    def within(self, tolerance: float) -> int:
        """How many configs are within ``tolerance`` (0.05 = 5%) of the optimum."""
        return int((self.values[self.ok] <= self.optimum * (1 + tolerance)).sum())
