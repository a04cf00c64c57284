"""The strategy benchmark: every strategy, on every dataset, at every budget, repeated.

Repeat r uses seed r. A budget counts distinct configs evaluated, failures included.
Runs that would be identical are shared. Strategies behave the same whatever their
budget hint (except ``auto``, which picks ``grid`` when the budget covers the space), so
each is run once per seed at the largest budget and a smaller budget's result is read off
the prefix of that run — exactly what a run stopped at that budget would have evaluated.
And ``auto`` shares the runs of the strategy it picks (``run_key``).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..strategies import make_strategy, run_key
from ..strategies.base import Budget
from .dataset import Dataset
from .driver import replay
from .importers import load_dataset
from .space import ReplaySpace
from .stats import evals_to_within, random_expectation, ratio_curve, summarise

EXACT_RANDOM = "random-exact"  # the strategy name of the exact random-search expectation


@dataclass(frozen=True)
class BenchRecord:
    """One strategy on one dataset at one budget (``repeats`` 0: the exact random expectation)."""

    dataset: str
    strategy: str
    budget: int
    mean_ratio: float
    median_ratio: float
    median_evals_to_5pct: float | None
    reached_5pct: float  # repeats that got within 5%; for random-exact, the probability
    repeats: int

    def as_json(self) -> dict:
        out = asdict(self)
        del out["repeats"]
        return out


@dataclass(frozen=True)
class BenchResult:
    records: tuple[BenchRecord, ...]
    curves: dict  # (dataset, strategy) -> mean ratio after each evaluation, over repeats
    optimum: dict  # dataset -> optimum


@dataclass(frozen=True)
class _Job:
    dataset: int
    strategy: str  # what actually runs: a run key
    budget: int
    seed: int


_DATASETS: list[Dataset] = []


def _init_worker(datasets: list[Dataset]) -> None:
    _DATASETS[:] = datasets


def _run(job: _Job) -> tuple[_Job, np.ndarray]:
    return job, run_once(_DATASETS[job.dataset], job.strategy, job.budget, job.seed)


def run_once(dataset: Dataset, strategy: str, budget: int, seed: int) -> np.ndarray:
    """Recorded values (NaN = failure) of the configs one replayed search evaluated."""
    space = ReplaySpace(dataset)
    s = make_strategy(strategy, space, seed=seed, budget_hint=budget)
    return replay(s, space, Budget(max_evals=budget)).values


def run_bench(
    datasets: Sequence[Dataset],
    strategies: Sequence[str],
    budgets: Sequence[int],
    repeats: int,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> BenchResult:
    """Run the protocol; ``progress(done, total)`` is called as replays finish."""
    budgets = sorted(set(budgets))
    longest: dict[tuple[int, str], int] = {}  # (dataset, run key) -> the budget it runs to
    for d, ds in enumerate(datasets):
        for s in strategies:
            for b in budgets:
                k = (d, run_key(s, len(ds), b))
                longest[k] = max(longest.get(k, 0), b)
    jobs = [_Job(d, k, b, r) for (d, k), b in longest.items() for r in range(repeats)]
    # Longest first, so the last workers do not start a long job alone.
    jobs.sort(key=lambda j: (-j.budget, j.strategy, j.dataset, j.seed))
    traces: dict[_Job, np.ndarray] = {}
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(list(datasets),)) as pool:
            for job, values in pool.map(_run, jobs, chunksize=1):
                traces[job] = values
                if progress:
                    progress(len(traces), len(jobs))
    else:
        _init_worker(list(datasets))
        for job in jobs:
            traces[job] = _run(job)[1]
            if progress:
                progress(len(traces), len(jobs))
    return _summarise(datasets, strategies, budgets, repeats, longest, traces)


def _summarise(datasets, strategies, budgets, repeats, longest, traces) -> BenchResult:
    records: list[BenchRecord] = []
    curves: dict = {}
    for d, ds in enumerate(datasets):
        opt = ds.optimum
        for s in strategies:
            # The curve: from the run of the largest budget.
            k = run_key(s, len(ds), budgets[-1])
            runs = [traces[_Job(d, k, longest[(d, k)], r)] for r in range(repeats)]
            curves[(ds.name, s)] = np.mean([_padded(ratio_curve(v, opt), budgets[-1]) for v in runs], axis=0)
            for b in budgets:
                k = run_key(s, len(ds), b)
                values = [traces[_Job(d, k, longest[(d, k)], r)][:b] for r in range(repeats)]
                ratios = [float(ratio_curve(v, opt)[-1]) if len(v) else 0.0 for v in values]
                evals = [evals_to_within(v, opt) for v in values]
                records.append(BenchRecord(ds.name, s, b, **asdict(summarise(ratios, evals, b))))
        for b in budgets:
            e = random_expectation(ds.values, b)
            records.append(BenchRecord(ds.name, EXACT_RANDOM, b, **asdict(e)))
    return BenchResult(records=tuple(records), curves=curves, optimum={ds.name: ds.optimum for ds in datasets})


def _padded(curve: np.ndarray, n: int) -> np.ndarray:
    """A search that stopped early (it exhausted a small space) keeps its last value."""
    if len(curve) >= n:
        return curve[:n]
    last = curve[-1] if len(curve) else 0.0
    return np.concatenate([curve, np.full(n - len(curve), last)])


def mean_over_datasets(records: Sequence[BenchRecord]) -> list[BenchRecord]:
    """Per strategy and budget, the mean of each dataset's mean and median ratio."""
    out = []
    keys = list(dict.fromkeys((r.strategy, r.budget) for r in records))
    for s, b in keys:
        rs = [r for r in records if r.strategy == s and r.budget == b]
        out.append(BenchRecord(
            dataset="mean", strategy=s, budget=b,
            mean_ratio=float(np.mean([r.mean_ratio for r in rs])),
            median_ratio=float(np.mean([r.median_ratio for r in rs])),
            median_evals_to_5pct=None,
            reached_5pct=float(np.mean([r.reached_5pct for r in rs])),
            repeats=rs[0].repeats,
        ))
    return out


def load_all(paths: Sequence[str | Path]) -> list[Dataset]:
    return [load_dataset(p) for p in paths]


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
