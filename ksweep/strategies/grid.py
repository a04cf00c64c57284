"""Exhaustive search: every valid config, in the space's order.

Configs are made one at a time by position (``space[i]``), so a space of any size
(beyond 2**63 configs too) is enumerated lazily: with a budget, the first N are swept.
"""

from __future__ import annotations

from typing import Any

from .base import SearchSpace, Strategy


class GridStrategy(Strategy):
    name = "grid"
    adaptive = False  # its order is fixed before any result

    def __init__(self, space: SearchSpace, seed: int = 0):
        super().__init__(space, seed)
        self._next = 0

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out = []
        while len(out) < n and self._next < self.space_size:
            out.append(self.space[self._next])
            self._next += 1
        return out
