"""Numeric features of configs for the surrogate model, each scaled to [0, 1].

A parameter whose values are all positive numbers is described by the log2 of its value
(scale "log", the default): kernel times usually depend on ratios of sizes, so 16 -> 32
matters as much as 128 -> 256. Other parameters, and every parameter with scale "rank",
by the rank of their value, so ordered values stay neighbours. An integer parameter
that mixes powers of two with other values also gets a *power-of-two* flag: GPU kernels
often run best at power-of-two sizes (whole warps, aligned vector loads, no partial
tiles), a pattern no smooth function of the value can express; the model's length scale
for the flag learns whether it matters for this kernel.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .indexed import value_ranks


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _log_scale(values) -> np.ndarray | None:
    if not all((_is_int(v) or isinstance(v, float)) and v > 0 for v in values):
        return None
    lv = np.log2(np.asarray(values, dtype=np.float64))
    return (lv - lv.min()) / (lv.max() - lv.min())


def feature_tables(params: Sequence, scale: str = "log") -> list[tuple[int, np.ndarray]]:
    """(parameter position, value index -> feature) for every feature column."""
    cols: list[tuple[int, np.ndarray]] = []
    for j, p in enumerate(params):
        k = len(p.values)
        if k < 2:
            continue
        rank = value_ranks(p.values) / (k - 1)
        log = _log_scale(p.values)
        cols.append((j, rank if scale == "rank" or log is None else log))
    for j, p in enumerate(params):
        values = p.values
        if len(values) > 2 and all(_is_int(v) and v > 0 for v in values):
            flag = np.array([float(v & (v - 1) == 0) for v in values])
            if 0 < flag.sum() < len(values):
                cols.append((j, flag))
    return cols


class Featurizer:
    def __init__(self, params: Sequence, scale: str = "log"):
        if scale not in ("log", "rank"):
            raise ValueError(f"feature scale must be 'log' or 'rank', not {scale!r}")
        self.tables = feature_tables(params, scale)

    @property
    def dims(self) -> int:
        return max(1, len(self.tables))

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if not self.tables:
            return np.zeros((len(rows), 1))
        return np.stack([table[rows[:, j]] for j, table in self.tables], axis=1)
