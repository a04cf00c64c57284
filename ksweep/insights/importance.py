"""Knob importance: each knob's share of the objective's variance over the OK configs.

The objective is taken on a log scale (a knob that makes every config 2× slower has the
same effect on fast and slow ones), when every value is positive. An additive model, the
objective as a constant plus one effect per value of each knob, is fitted to the OK
configs by least squares (backfitting: each knob's effects are the mean of what the others
leave, over its values, until nothing moves). What the model explains of the objective's
variance (R²) is shared among the knobs in proportion to the variance of each knob's
fitted effect over the configs: a knob's *share*, from 0 to 1, the shares summing to R².
On a full grid the effects are uncorrelated and a share is exactly the variance of the
knob's effect over the objective's. Fitting all knobs together, not each alone, matters
because the OK configs are no full grid: constraints and failures remove configs, which
makes knobs correlated, and a knob with no effect of its own would otherwise be credited
with the effect of the knob it goes with.

A *pair*'s share is what the two knobs explain together beyond their own effects: the
variance of the additive model's residuals' means over the pair's combinations of values.
A knob has *no measurable effect* when its share and every share of a pair it is in are
below ``DEAD`` and each of its values has at least ``LEAST_PER_VALUE`` OK configs (fewer
cannot show an effect, nor its absence). Such a knob can be fixed at its value in BEST:
the *trimmed* spec keeps the configs of that value only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .table import Table

DEAD = 0.01  # share below which a knob has no measurable effect
LEAST_PER_VALUE = 3  # OK configs each value of a knob needs for it to be judged dead
LEAST_CONFIGS = 8  # OK configs below which no importance is computed
PAIRS_SHOWN = 3
_ITERATIONS = 200


@dataclass(frozen=True)
class Importance:
    shares: Mapping[str, float]  # knob -> share of the variance, most first
    pairs: tuple[tuple[str, str, float], ...] = ()  # the strongest pairs beyond their own effects
    dead: tuple[str, ...] = ()  # knobs with no measurable effect
    fixed: tuple[str, ...] = ()  # knobs with one value over the OK configs: nothing to measure
    configs: int = 0  # OK configs it was computed over
    log: bool = True  # on the log of the objective
    explained: float = 0.0  # the additive model's share of the variance (R²)
    trim: Mapping[str, Any] = field(default_factory=dict)  # dead knob -> its value in BEST
    trim_factor: int = 1  # how many times fewer configs the trimmed spec has (of the raw product)

    def to_json(self) -> dict:
        return {"importance": {k: round(v, 6) for k, v in self.shares.items()},
                "pairs": [{"params": [a, b], "share": round(s, 6)} for a, b, s in self.pairs],
                "dead": list(self.dead), "fixed": list(self.fixed), "configs": self.configs, "log": self.log,
                "explained": round(self.explained, 6), "trim": dict(self.trim), "trim_factor": self.trim_factor}


def importance(table: Table) -> Importance | None:
    """The shares of ``table``'s knobs (the module's doc); None with fewer than
    ``LEAST_CONFIGS`` OK configs or an objective that does not vary."""
    ok = np.flatnonzero(table.ok & np.isfinite(table.values))
    if len(ok) < LEAST_CONFIGS:
        return None
    y = table.values[ok]
    log = bool(np.all(y > 0))
    if log:
        y = np.log(y)
    total = float(np.var(y))
    if not math.isfinite(total) or total <= 1e-300:
        return None
    codes: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    fixed = []
    for k in table.knobs:
        values = table.columns[k][ok]
        _, inverse, count = np.unique(np.array([_key(v) for v in values], dtype=object).astype(str),
                                      return_inverse=True, return_counts=True)
        if len(count) < 2:
            fixed.append(k)
            continue
        codes[k], counts[k] = inverse.ravel(), count
    effects = _backfit(y - y.mean(), codes, counts)
    fitted = sum((e[codes[k]] for k, e in effects.items()), np.zeros(len(y)))
    residual = y - y.mean() - fitted
    explained = max(0.0, 1.0 - float(np.var(residual)) / total)
    spread = {k: float(np.var(e[codes[k]])) for k, e in effects.items()}
    whole = sum(spread.values())
    shares = {k: explained * v / whole if whole > 0 else 0.0 for k, v in spread.items()}
    pair_shares = []
    names = list(codes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            cells = codes[a] * len(counts[b]) + codes[b]
            n = np.bincount(cells)
            means = np.bincount(cells, weights=residual) / np.maximum(n, 1)
            pair_shares.append((a, b, float(np.sum(n * means ** 2) / len(y)) / total))
    pair_shares.sort(key=lambda p: -p[2])
    in_pairs = {k: max((s for a, b, s in pair_shares if k in (a, b)), default=0.0) for k in names}
    dead = tuple(k for k in names if shares[k] < DEAD and in_pairs[k] < DEAD and counts[k].min() >= LEAST_PER_VALUE)
    best = table.config(table.contest.best) if table.contest.best is not None else {}
    trim = {k: best[k] for k in dead if k in best}
    factor = 1
    for k in trim:
        factor *= len(set(map(_key, table.columns[k])))
    ordered = dict(sorted(shares.items(), key=lambda kv: -kv[1]))
    return Importance(ordered, tuple(p for p in pair_shares[:PAIRS_SHOWN] if p[2] >= DEAD), dead, tuple(fixed),
                      len(y), log, explained, trim, factor)


def _key(v: Any) -> Any:
    return repr(v) if isinstance(v, (list, tuple, dict)) else v


def _backfit(y: np.ndarray, codes: Mapping[str, np.ndarray], counts: Mapping[str, np.ndarray]) -> dict:
    """Each knob's effect per value in the additive least-squares fit of ``y`` (centred)."""
    effects = {k: np.zeros(len(c)) for k, c in counts.items()}
    fitted = np.zeros(len(y))
    scale = float(np.std(y)) or 1.0
    for _ in range(_ITERATIONS):
        moved = 0.0
        for k, c in codes.items():
            fitted -= effects[k][c]
            new = np.bincount(c, weights=y - fitted, minlength=len(counts[k])) / counts[k]
            new -= np.sum(new * counts[k]) / len(y)  # centred: the constant holds the mean
            moved = max(moved, float(np.max(np.abs(new - effects[k]))))
            effects[k] = new
            fitted += new[c]
        if moved < 1e-9 * scale:
            break
    return effects
