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
from ..warm.prior import Prior
from ..warm.sources import dataset_prior
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
    warm_from: str = ""  # the source dataset of a warm-started entry ("": cold)

    def as_json(self) -> dict:
        out = asdict(self)
        del out["repeats"]
        if not self.warm_from:
            del out["warm_from"]
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
    source: int = -1  # the dataset the search is warm-started from (-1: cold)


_DATASETS: list[Dataset] = []
_PRIORS: dict[int, Prior] = {}  # source dataset -> its prior, made once per worker


def _init_worker(datasets: list[Dataset]) -> None:
    _DATASETS[:] = datasets
    _PRIORS.clear()


def _prior(source: int) -> Prior | None:
    if source < 0:
        return None
    if source not in _PRIORS:
        _PRIORS[source] = dataset_prior(_DATASETS[source])
    return _PRIORS[source]


def _run(job: _Job) -> tuple[_Job, np.ndarray]:
    return job, run_once(_DATASETS[job.dataset], job.strategy, job.budget, job.seed, _prior(job.source))


def run_once(dataset: Dataset, strategy: str, budget: int, seed: int, prior: Prior | None = None) -> np.ndarray:
    """Recorded values (NaN = failure) of the configs one replayed search evaluated
    (warm-started from ``prior`` when given)."""
    space = ReplaySpace(dataset)
    s = make_strategy(strategy, space, seed=seed, budget_hint=budget, prior=prior)
    return replay(s, space, Budget(max_evals=budget)).values


def pair_name(datasets: Sequence[Dataset], target: int, source: int) -> str:
    """The row label of a warm-started entry: ``target ← source``."""
    return f"{datasets[target].name} ← {datasets[source].name}"


def same_kernel_pairs(datasets: Sequence[Dataset]) -> list[tuple[int, int]]:
    """Every ordered (target, source) pair of datasets of the same kernel: the same name up
    to the first underscore (``dedispersion_A100`` and ``dedispersion_W7800``)."""
    kernel = [d.name.split("_")[0] for d in datasets]
    return [(t, s) for t in range(len(datasets)) for s in range(len(datasets))
            if t != s and kernel[t] == kernel[s]]


def run_bench(
    datasets: Sequence[Dataset],
    strategies: Sequence[str],
    budgets: Sequence[int],
    repeats: int,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    pairs: Sequence[tuple[int, int]] = (),
    cold: bool = True,
) -> BenchResult:
    """Run the protocol; ``progress(done, total)`` is called as replays finish. ``pairs``:
    (target, source) dataset indices, each an entry of its own (``target ← source``): the
    search of the target warm-started from the source's recorded results. ``cold=False``:
    only those entries, not the cold search of every dataset."""
    budgets = sorted(set(budgets))
    entries = ([(d, -1) for d in range(len(datasets))] if cold else []) + list(pairs)
    longest: dict[tuple[int, int, str], int] = {}  # (dataset, source, run key) -> the budget it runs to
    for d, src in entries:
        for s in strategies:
            for b in budgets:
                k = (d, src, run_key(s, len(datasets[d]), b))
                longest[k] = max(longest.get(k, 0), b)
    jobs = [_Job(d, k, b, r, src) for (d, src, k), b in longest.items() for r in range(repeats)]
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
    return _summarise(datasets, strategies, budgets, repeats, longest, traces, entries)


def _summarise(datasets, strategies, budgets, repeats, longest, traces, entries) -> BenchResult:
    records: list[BenchRecord] = []
    curves: dict = {}
    optimum = {}
    for d, src in entries:
        ds = datasets[d]
        opt = ds.optimum
        name = ds.name if src < 0 else pair_name(datasets, d, src)
        optimum[name] = opt
        for s in strategies:
            # The curve: from the run of the largest budget.
            k = run_key(s, len(ds), budgets[-1])
            runs = [traces[_Job(d, k, longest[(d, src, k)], r, src)] for r in range(repeats)]
            curves[(name, s)] = np.mean([_padded(ratio_curve(v, opt), budgets[-1]) for v in runs], axis=0)
            for b in budgets:
                k = run_key(s, len(ds), b)
                values = [traces[_Job(d, k, longest[(d, src, k)], r, src)][:b] for r in range(repeats)]
                ratios = [float(ratio_curve(v, opt)[-1]) if len(v) else 0.0 for v in values]
                evals = [evals_to_within(v, opt) for v in values]
                records.append(BenchRecord(name, s, b, **asdict(summarise(ratios, evals, b)),
                                           warm_from="" if src < 0 else datasets[src].name))
        if src < 0:
            for b in budgets:
                e = random_expectation(ds.values, b)
                records.append(BenchRecord(name, EXACT_RANDOM, b, **asdict(e)))
    return BenchResult(records=tuple(records), curves=curves, optimum=optimum)


def _padded(curve: np.ndarray, n: int) -> np.ndarray:
    """A search that stopped early (it exhausted a small space) keeps its last value."""
    if len(curve) >= n:
        return curve[:n]
    last = curve[-1] if len(curve) else 0.0
    return np.concatenate([curve, np.full(n - len(curve), last)])


def mean_over_datasets(records: Sequence[BenchRecord], warm: bool = False) -> list[BenchRecord]:
    """Per strategy and budget, the mean of each dataset's mean and median ratio: over the
    cold entries, or (``warm``) over the warm-started pairs — never the two together (the
    exact random expectation has cold entries only, so a mean of both would set a strategy's
    warm pairs against random's cold datasets)."""
    out = []
    records = [r for r in records if bool(r.warm_from) == warm]
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


def parse_pairs(text: str, datasets: Sequence[Dataset]) -> list[tuple[int, int]]:
    """``TARGET<-SOURCE[,TARGET<-SOURCE...]`` (dataset names: the file name without .json.gz)
    as index pairs; ``same-kernel``: every ordered pair of datasets of one kernel."""
    from ..errors import KsweepError

    if text.strip() == "same-kernel":
        pairs = same_kernel_pairs(datasets)
        if not pairs:
            raise KsweepError(f"--warm-start-from same-kernel: no two of the datasets given are of one kernel "
                              f"(the name up to its first underscore: {', '.join(d.name for d in datasets)})")
        return pairs
    names = {d.name: i for i, d in enumerate(datasets)}
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        target, sep, source = (x.strip() for x in part.partition("<-"))
        if not sep or not target or not source:
            raise KsweepError(f"--warm-start-from {part}: give TARGET<-SOURCE pairs of dataset names, "
                              f"or same-kernel")
        for name in (target, source):
            if name not in names:
                raise KsweepError(f"--warm-start-from {part}: no dataset named {name} among the files given "
                                  f"({', '.join(names)})")
        if target == source:
            raise KsweepError(f"--warm-start-from {part}: a dataset cannot warm-start itself")
        t, src = datasets[names[target]], datasets[names[source]]
        if not set(t.names) & set(src.names):  # as replay and run refuse it (warm.sources.load_prior)
            raise KsweepError(f"--warm-start-from {part}: {source} shares no parameter with {target} (its: "
                              f"{', '.join(src.names[:8])}; the target's: {', '.join(t.names[:8])}): "
                              f"another kernel's results inform nothing")
        out.append((names[target], names[source]))
    if not out:
        raise KsweepError(f"--warm-start-from {text}: no pair given")
    return list(dict.fromkeys(out))


def load_all(paths: Sequence[str | Path]) -> list[Dataset]:
    return [load_dataset(p) for p in paths]


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
