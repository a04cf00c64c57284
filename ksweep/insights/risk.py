"""The winner's risk: how many configs sit within noise of BEST, and how likely another
config would win if the measurements behind the values were taken again.

Each value that competes for BEST (``table.Contest``) has a standard error: from its own
runs when it has several (a confirmation's rounds, a recording's repeats: their standard
deviation over the square root of their number), else from the typical relative spread of
one measurement (``Contest.noise``) when something was measured more than once. A config
is *within noise* of BEST when the two values differ by less than 1.96 times the standard
error of their difference.

The *chance of a change* is a bootstrap: ``RESAMPLES`` times, every config near BEST
(within ``NEAR`` standard errors of the difference) gets a new value, its runs drawn again
with replacement (a confirmation's rounds drawn together for every config, as they were
measured: a round that was slow for all stays slow for all), or, for a single
measurement, the value times 1 + noise × a standard normal draw; the value is the
statistic of the drawn runs (a confirmation's median, a recording's mean). The share of
resamples in which a config other than BEST is best is the chance that the winner would
change. Without any repeated measurement there is no noise to go by: both counts are
then unknown (None).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .table import Contest, Table, spreads

RESAMPLES = 1000
Z95 = 1.96
NEAR = 4.0  # configs within this many standard errors of BEST take part in the bootstrap
MAX_NEAR = 200  # and at most this many, the nearest
SEED = 0


@dataclass(frozen=True)
class Risk:
    best: int | None  # BEST's row in the table
    value: float | None  # BEST's value as it compares
    noise: float | None  # relative spread of one measurement (None: nothing was measured twice)
    runs: int  # runs behind BEST's value (1: a single measurement)
    within: int | None  # other configs within noise of BEST (None: the noise is unknown)
    within_rows: tuple[int, ...] = ()  # the nearest of them, nearest first (at most 10)
    change: float | None = None  # chance that another config wins when measured again
    challengers: tuple[tuple[int, float], ...] = ()  # (row, share of resamples it won), most first
    source: str = ""  # what the runs are
    resamples: int = 0

    def to_json(self, table: Table) -> dict:
        def row(r: int) -> dict:
            return {"config": table.config(r), "value": table.contest.values.get(r)}

        return {"best": None if self.best is None else row(self.best), "noise": self.noise, "runs": self.runs,
                "within_noise": self.within, "nearest": [row(r) for r in self.within_rows],
                "change": self.change, "challengers": [{**row(r), "share": s} for r, s in self.challengers],
                "source": self.source, "resamples": self.resamples}


def risk(table: Table, resamples: int = RESAMPLES, seed: int = SEED) -> Risk:
    c = table.contest
    if c.best is None or c.best not in c.values:
        return Risk(None, None, c.noise, 0, None, source=c.source)
    rows = np.array(sorted(c.values), dtype=np.int64)
    values = np.array([c.values[int(r)] for r in rows], dtype=np.float64)
    own = spreads({int(r): c.runs[int(r)] for r in rows if int(r) in c.runs})
    se = np.array([own[r][0] / math.sqrt(own[r][1]) if r in own else (
        c.noise * abs(v) if c.noise is not None else math.nan) for r, v in zip(rows.tolist(), values)],
        dtype=np.float64)
    b = int(np.flatnonzero(rows == c.best)[0])
    best_runs = len(c.runs.get(c.best, ())) or 1
    if np.all(np.isnan(se)):
        return Risk(c.best, float(values[b]), c.noise, best_runs, None, source=c.source)
    se = np.nan_to_num(se, nan=0.0)
    sign = 1.0 if table.direction == "min" else -1.0
    gap = sign * (values - values[b])
    spread = np.sqrt(se ** 2 + se[b] ** 2)
    inside = (np.abs(gap) <= Z95 * spread) & (np.arange(len(rows)) != b)
    order = np.argsort(np.abs(gap[inside]), kind="stable")
    within_rows = tuple(int(r) for r in rows[inside][order][:10])
    near = np.flatnonzero((gap <= NEAR * spread) | (np.arange(len(rows)) == b))
    near = near[np.argsort(gap[near], kind="stable")][:MAX_NEAR]
    if b not in near:
        near = np.append(near, b)
    wins = _bootstrap(table, c, rows[near], values[near], resamples, seed, sign)
    winners, counts = np.unique(rows[near][wins], return_counts=True)
    share = {int(r): n / resamples for r, n in zip(winners, counts)}
    change = 1.0 - share.get(c.best, 0.0)
    challengers = tuple(sorted(((r, s) for r, s in share.items() if r != c.best), key=lambda rs: -rs[1]))[:5]
    return Risk(c.best, float(values[b]), c.noise, best_runs, int(inside.sum()), within_rows, change, challengers,
                c.source, resamples)


def _bootstrap(table: Table, c: Contest, rows: np.ndarray, values: np.ndarray, resamples: int, seed: int,
               sign: float) -> np.ndarray:
    """For each resample, the index (into ``rows``) of the best config."""
    rng = np.random.default_rng(seed)
    drawn = np.tile(values, (resamples, 1))
    together = [i for i, r in enumerate(rows) if int(r) in c.rounds and len(c.runs.get(int(r), ())) > 1]
    if together:  # a confirmation: draw its rounds, the same ones for every config
        ids = np.unique(np.concatenate([c.rounds[int(rows[i])] for i in together]))
        grid = np.full((len(together), len(ids)), np.nan)
        for j, i in enumerate(together):
            at = np.searchsorted(ids, c.rounds[int(rows[i])])
            grid[j, at] = c.runs[int(rows[i])]
        pick = rng.integers(0, len(ids), size=(resamples, len(ids)))
        chosen = grid[:, pick]  # (configs, resamples, rounds)
        with warnings.catch_warnings():  # a config not measured in any drawn round: its own value
            warnings.simplefilter("ignore", RuntimeWarning)
            stat = np.nanmedian(chosen, axis=2) if c.statistic == "median" else np.nanmean(chosen, axis=2)
        for j, i in enumerate(together):
            drawn[:, i] = np.where(np.isnan(stat[j]), values[i], stat[j])
    for i, r in enumerate(rows):
        r = int(r)
        if i in together:
            continue
        runs = c.runs.get(r)
        if runs is not None and len(runs) > 1:
            pick = rng.integers(0, len(runs), size=(resamples, len(runs)))
            sample = np.asarray(runs)[pick]
            drawn[:, i] = np.median(sample, axis=1) if c.statistic == "median" else sample.mean(axis=1)
        elif c.noise is not None:
            drawn[:, i] = values[i] * (1.0 + c.noise * rng.standard_normal(resamples))
    return np.argmin(sign * drawn, axis=1)
