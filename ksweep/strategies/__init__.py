"""Search strategies, by name."""

from __future__ import annotations

from ..errors import KsweepError
from .base import Budget, Strategy
from .grid import GridStrategy
from .random import RandomStrategy

STRATEGIES = ("grid", "random", "auto")


def make_strategy(name: str, space, seed: int = 0, budget_hint: int | None = None) -> Strategy:
    if name == "grid" or (name == "auto" and (budget_hint is None or budget_hint >= len(space))):
        return GridStrategy(space, seed)
    if name in ("random", "auto"):
        return RandomStrategy(space, seed)
    raise KsweepError(f"unknown strategy '{name}' (known: {', '.join(STRATEGIES)})")
