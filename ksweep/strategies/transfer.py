"""The prior mean of a warm-started surrogate: what the sources say a target config gives.

For each source (``prior.py``), every config is reduced to the parameters that the target
and all sources share (``common_names``), and its value taken to the model's scale (the
log of the time when every value is positive) and centred on the source's mean. At a
target config the prior is that centred value where the source recorded the same common
values, else a Gaussian process fitted to the source's results predicts it (the best half
and a spread of the rest, as the target's own model). Several sources are averaged.

So a parameter the source never varied is ignored by the prior (the target's own model
learns it), and a source of 100 results from an earlier sweep informs the configs it never
tried through its model. Deterministic: no random numbers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .features import Featurizer
from .gp import GaussianProcess
from .prior import Prior, common_names, observations

MAX_POINTS = 300  # source results a source model is fitted to
FIT_STEPS = 40
CHUNK = 20_000  # target rows predicted at a time


class TransferMean:
    def __init__(self, prior: Prior, params: Sequence, log: bool):
        self.params = tuple(params)
        names = common_names(prior, params)
        self.columns = np.array([j for j, p in enumerate(params) if p.name in names], dtype=np.int64)
        common = [p for p in params if p.name in names]
        self._featurize = Featurizer(common) if common else None
        self._sources = []
        spreads = []
        for source in prior.sources:
            rows, values = observations(source, params, names)
            ok = ~np.isnan(values)
            if log and (values[ok] <= 0).any():
                continue  # the target's values are positive but these are not: a different metric
            if ok.sum() < 1:
                continue
            y = np.where(ok, np.log(np.where(ok, values, 1.0)) if log else values, np.nan)
            y = y - np.nanmean(y)
            spreads.append(float(np.nanstd(y)))
            self._sources.append((rows, y, self._model(rows[ok], y[ok])))
        self.spread = float(np.mean(spreads)) if spreads else 0.0  # typical sd of a source's centred values

    def __bool__(self) -> bool:
        return bool(self._sources)

    def _model(self, rows: np.ndarray, y: np.ndarray) -> tuple[GaussianProcess, float] | None:
        if self._featurize is None or len(y) < 2 or y.std() == 0:
            return None
        if len(y) > MAX_POINTS:
            order = np.argsort(y, kind="stable")
            best, rest = order[: MAX_POINTS // 2], order[MAX_POINTS // 2:]
            rest = rest[(np.arange(MAX_POINTS - len(best)) * (len(rest) / (MAX_POINTS - len(best)))).astype(int)]
            keep = np.sort(np.concatenate([best, rest]))
            rows, y = rows[keep], y[keep]
        x = self._featurize(rows)
        scale = y.std()
        gp = GaussianProcess(self._featurize.dims)
        gp.fit(x, y / scale, steps=FIT_STEPS)
        gp.condition(x, y / scale)
        return gp, scale

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """The prior (centred, on the model's scale) at target configs given as rows of value
        indices; 0 where no source says anything."""
        rows = np.asarray(rows)
        if not self._sources or not len(rows):
            return np.zeros(len(rows))
        sub = rows[:, self.columns].astype(np.int64)
        total = np.zeros(len(rows))
        for src_rows, y, model in self._sources:
            total += self._one(sub, src_rows, y, model)
        return total / len(self._sources)

    def _one(self, sub: np.ndarray, src_rows: np.ndarray, y: np.ndarray, model) -> np.ndarray:
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
                    out[part] = gp.predict(self._featurize(sub[part]))[0] * scale
        return out
