"""One replayed search and its outcome: what ``ksweep replay`` reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..strategies import make_strategy
from ..strategies.base import Budget
from ..warm.prior import Prior
from .dataset import Dataset
from .driver import replay
from .space import ReplaySpace
from .stats import evals_to_within


@dataclass(frozen=True)
class ReplayOutcome:
    dataset: str
    strategy: str
    seed: int
    evaluations: int
    failures: int
    best_config: dict[str, Any] | None
    best_value: float | None
    optimum: float
    evals_to_5pct: int | None

    @property
    def ratio(self) -> float:
        """optimum / best found: 1.0 is the optimum, 0.0 nothing valid found."""
        return 0.0 if self.best_value is None else self.optimum / self.best_value


def replay_search(
    dataset: Dataset,
    strategy: str,
    seed: int = 0,
    max_evals: int | None = None,
    time_limit: float | None = None,
    patience: int | None = None,
    batch: int = 1,
    prior: Prior | None = None,
) -> ReplayOutcome:
    """``prior``: start from earlier results (warm start; ``warm.sources.load_prior``)."""
    space = ReplaySpace(dataset)
    s = make_strategy(strategy, space, seed=seed, budget_hint=max_evals, prior=prior)
    trace = replay(s, space, Budget(max_evals=max_evals, time_limit=time_limit, patience=patience), batch=batch)
    best = trace.best_position
    return ReplayOutcome(
        dataset=dataset.name,
        strategy=strategy,
        seed=seed,
        evaluations=len(trace),
        failures=int(np.isnan(trace.values).sum()),
        best_config=None if best is None else dataset.config(best),
        best_value=None if best is None else float(dataset.values[best]),
        optimum=dataset.optimum,
        evals_to_5pct=evals_to_within(trace.values, dataset.optimum),
    )
