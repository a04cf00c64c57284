"""Run a strategy against recorded results: the synchronous replay loop.

The recorded value of each config the strategy asks for is told back at once (a recorded
failure as ``None``), so a replayed search is a pure function of the strategy, its seed,
the dataset and the budget: no GPU, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..strategies.base import Budget, Strategy
from .space import ReplaySpace


@dataclass(frozen=True)
class Trace:
    """The configs a replayed search evaluated, in order, and their recorded values."""

    positions: tuple[int, ...]  # positions in the replayed space
    values: np.ndarray  # recorded value of each, NaN where the config failed

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def best_position(self) -> int | None:
        if np.isnan(self.values).all():
            return None
        return self.positions[int(np.nanargmin(self.values))]


def replay(strategy: Strategy, space: ReplaySpace, budget: Budget, batch: int = 1) -> Trace:
    """Ask, look up, tell, until the budget or the strategy is exhausted.

    ``batch`` configs are asked at a time, as a driver that builds ahead would; every one
    is told before the next ask, so a strategy never waits on results here.
    """
    recorded = space.dataset.values
    positions: list[int] = []
    while not budget.exhausted() and not strategy.exhausted:
        left = budget.remaining()
        configs = strategy.ask(batch if left is None else min(batch, left))
        if not configs:
            break  # nothing pending, nothing proposed: the strategy has no more to offer
        for config in configs:
            i = space.index(config)
            value = None if np.isnan(recorded[i]) else float(recorded[i])
            strategy.tell(config, value)
            budget.record(value)
            positions.append(i)
    return Trace(positions=tuple(positions), values=recorded[np.array(positions, dtype=np.int64)])
