"""``ksweep bench-strategies``: every search strategy replayed on recorded datasets at every
budget, repeated with seed r (``replay/bench.py``); ``report/bench_tables.py`` and
``report/bench_plot.py`` show the records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import KsweepError
from ..strategies import STRATEGIES, missing

__all__ = ["Benched", "STRATEGIES", "bench"]


@dataclass(frozen=True)
class Benched:
    result: Any  # replay.bench.BenchResult: a record per strategy × dataset × budget, and the curves
    datasets: list  # the datasets, in the order given


def bench(paths: Sequence[str], strategies: Sequence[str] | None = None, budgets: Sequence[int] = (25, 50, 100, 200),
          repeats: int = 30, *, jobs: int | None = None, warm_start_from: str | None = None, warm_only: bool = False,
          progress: Callable[[int, int], None] | None = None, note: Callable[[Exception], None] = lambda m: None
          ) -> Benched:
    """Replay ``strategies`` (None: every strategy that can run here; ``note`` is told of each
    one left out) on the datasets at ``paths``, at each budget, ``repeats`` times, on ``jobs``
    worker processes (default: the CPU count); ``warm_start_from``: TARGET<-SOURCE pairs of
    dataset names (or ``same-kernel``) searched warm-started too, or only (``warm_only``)."""
    from ..replay.bench import default_workers, load_all, parse_pairs, run_bench

    datasets = load_all(paths)
    if warm_only and not warm_start_from:
        raise KsweepError("--warm-only needs --warm-start-from PAIRS")
    pairs = parse_pairs(warm_start_from, datasets) if warm_start_from else []
    absent = {s: m for s in (strategies or STRATEGIES) if (m := missing(s)) is not None}
    if strategies is None:  # all that can run here
        strategies = [s for s in STRATEGIES if s not in absent]
        for m in absent.values():
            note(m)
    elif absent:  # named: each must be able to run, said before any work starts
        raise next(iter(absent.values()))
    result = run_bench(datasets, strategies, budgets, repeats, workers=jobs or default_workers(), progress=progress,
                       pairs=pairs, cold=not warm_only)
    return Benched(result, datasets)
