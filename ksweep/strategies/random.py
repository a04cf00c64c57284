"""Random search without replacement over the valid configs."""

from __future__ import annotations

import random

from .base import Strategy


class RandomStrategy(Strategy):
    name = "random"

    def __init__(self, space, seed: int = 0):
        super().__init__(space, seed)
        self._order = random.Random(seed).sample(range(len(space)), len(space))
        self._next = 0

    def _propose(self, n: int):
        out = []
        while len(out) < n and self._next < len(self._order):
            out.append(self.space[self._order[self._next]])
            self._next += 1
        if self._next >= len(self._order):
            self.exhausted = True
        return out
