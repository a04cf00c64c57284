"""Exhaustive search: every valid config, in the space's order."""

from __future__ import annotations

from .base import Strategy


class GridStrategy(Strategy):
    name = "grid"

    def __init__(self, space, seed: int = 0):
        super().__init__(space, seed)
        self._next = 0

    def _propose(self, n: int):
        out = []
        while len(out) < n and self._next < len(self.space):
            out.append(self.space[self._next])
            self._next += 1
        if self._next >= len(self.space):
            self.exhausted = True
        return out
