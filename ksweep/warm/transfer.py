"""The prior of a warm-started surrogate: what the sources say a target config gives.

Each source (``prior.py``) makes one *component*, or two when it sets switches
(``prior.switch_names``): its configs reduced to the parameters it shares with the target,
and the same without the switches (what these sizes give on the source whichever code path
wins there: the best it recorded over the switches' values). A component's values are
taken to the model's scale (the log of the time when every value is positive) and centred
on their mean. At a target config a component is that centred value where the source
recorded the same values, else a Gaussian process fitted to the source's results predicts
it (the best half and a spread of the rest, as the target's own model). The surrogate
weighs the components by how well each explains the target's own results.

So a parameter the source never varied is ignored (the target's own model learns it), and a
source of 100 results from an earlier sweep informs the configs it never tried through its
model. Deterministic: no random numbers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..strategies.features import Featurizer
from ..strategies.gp import GaussianProcess
from .prior import Prior, common_names, observations

MAX_POINTS = 300  # source results a source model is fitted to
FIT_STEPS = 40
CHUNK = 20_000  # target rows predicted at a time


class TransferMean:
    """What the sources say of target configs, one column per *component*: each source at
    every parameter it shares with the target and, when ``switches`` are given and it sets
    some, the same source with the switches left out (at each config, the best it recorded
    over the switches' values: what these sizes give on the source whichever code path
    wins there). The target's results weigh the columns (``surrogate``)."""

    def __init__(self, prior: Prior, params: Sequence, log: bool, switches: Sequence[str] = ()):
        self.params = tuple(params)
        self._components = []  # (columns, featurizer, source rows, centred values, model)
        spreads = []
        for source in prior.sources:
            shared = common_names(source, params)
            variants = [shared]
            if any(n in switches for n in shared):
                variants.append(tuple(n for n in shared if n not in switches))
            for names in variants:
                rows, values = observations(source, params, names)
                ok = ~np.isnan(values)
                if log and (values[ok] <= 0).any():
                    break  # the target's values are positive but these are not: a different metric
                if ok.sum() < 1:
                    break
                y = np.where(ok, np.log(np.where(ok, values, 1.0)) if log else values, np.nan)
                y = y - np.nanmean(y)
                columns = np.array([j for j, p in enumerate(params) if p.name in names], dtype=np.int64)
                featurize = Featurizer([params[j] for j in columns]) if len(columns) else None
                spreads.append(float(np.nanstd(y)))
                self._components.append((columns, featurize, rows, y, self._model(featurize, rows[ok], y[ok])))
        self.spreads = np.array(spreads)  # typical sd of each component's centred values

    def __bool__(self) -> bool:
        return bool(self._components)

    def __len__(self) -> int:
        return len(self._components)

    @staticmethod
    def _model(featurize, rows: np.ndarray, y: np.ndarray) -> tuple[GaussianProcess, float] | None:
        if featurize is None or len(y) < 2 or y.std() == 0:
            return None
        if len(y) > MAX_POINTS:
            order = np.argsort(y, kind="stable")
            best, rest = order[: MAX_POINTS // 2], order[MAX_POINTS // 2:]
            rest = rest[(np.arange(MAX_POINTS - len(best)) * (len(rest) / (MAX_POINTS - len(best)))).astype(int)]
            keep = np.sort(np.concatenate([best, rest]))
            rows, y = rows[keep], y[keep]
        x = featurize(rows)
        scale = y.std()
        gp = GaussianProcess(featurize.dims)
        gp.fit(x, y / scale, steps=FIT_STEPS)
        gp.condition(x, y / scale)
        return gp, scale

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """The components (centred, on the model's scale) at target configs given as rows of
        value indices: one column each."""
        rows = np.asarray(rows)
        out = np.zeros((len(rows), len(self._components)))
        if len(rows):
            for k, component in enumerate(self._components):
                out[:, k] = self._one(rows, *component)
        return out

    @staticmethod
    def _one(rows: np.ndarray, columns, featurize, src_rows: np.ndarray, y: np.ndarray, model) -> np.ndarray:
        sub = rows[:, columns].astype(np.int64)
        out = np.full(len(sub), np.nan)
        if sub.shape[1]:
            both = np.vstack([src_rows, sub])
            _, inverse = np.unique(both, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            table = np.full(inverse.max() + 1, np.nan)
            table[inverse[: len(src_rows)]] = y
            out = table[inverse[len(src_rows):]]
        missing = np.flatnonzero(np.isnan(out))
        if len(missing):
            if model is None:
                out[missing] = 0.0 if np.isnan(y).all() else float(np.nanmean(y))
            else:
                gp, scale = model
                for k in range(0, len(missing), CHUNK):
                    part = missing[k:k + CHUNK]
                    out[part] = gp.predict(featurize(sub[part]))[0] * scale
        return out


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two samples (tied values share their mean rank); 0.0
    where either is constant or fewer than three pairs are finite."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return 0.0
    ra, rb = _ranks(a[ok]), _ranks(b[ok])
    ra, rb = ra - ra.mean(), rb - rb.mean()
    scale = float(np.sqrt((ra ** 2).sum() * (rb ** 2).sum()))
    return float((ra * rb).sum() / scale) if scale > 0 else 0.0


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=float)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse.reshape(-1), weights=ranks)
    return (sums / counts)[inverse.reshape(-1)]
