"""Random search without replacement: a uniformly random order of the valid configs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import SearchSpace, Strategy
from .indexed import random_positions

PERMUTE_LIMIT = 1 << 22  # shuffle positions up to this many configs; draw and reject above


class RandomStrategy(Strategy):
    name = "random"
    adaptive = False  # its order is fixed before any result

    def __init__(self, space: SearchSpace, seed: int = 0):
        super().__init__(space, seed)
        self._rng = np.random.default_rng(seed)
        self._order = self._rng.permutation(self.space_size) if self.space_size <= PERMUTE_LIMIT else None
        self._next = 0
        self._drawn: set[int] = set()

    def _propose(self, n: int) -> list[dict[str, Any]]:
        if self._order is not None:
            take = self._order[self._next : self._next + n]
            self._next += len(take)
            return [self.space[int(i)] for i in take]
        # A huge space: collisions are rare, so rejecting repeats costs little. Positions
        # beyond int64 (a space of more than 2**63 - 1 configs) are drawn as Python integers.
        out = []
        while len(out) < n and len(self._drawn) < self.space_size:
            i = int(random_positions(self._rng, self.space_size, 1)[0])
            if i not in self._drawn:
                self._drawn.add(i)
                out.append(self.space[i])
        return out
