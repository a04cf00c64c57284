"""The replayed search space: exactly the configs a dataset recorded.

It has the ``SearchSpace`` shape strategies search (``len``, ``[i]``, ``index``, ``in``,
``params`` with ordered value lists), plus ``rows``: every config as a row of value
indices, which vectorised strategies use instead of enumerating dicts.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import numpy as np

from .dataset import Dataset


class ReplaySpace:
    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self.params = dataset.params
        self.names = dataset.names
        self.rows = dataset.rows
        self._lookup = [{v: j for j, v in enumerate(p.values)} for p in self.params]
        self._position = {tuple(r): i for i, r in enumerate(self.rows.tolist())}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.dataset.config(i)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(len(self)))

    def index(self, config: Mapping[str, Any]) -> int:
        """Position of a recorded config; ValueError if the dataset did not record it."""
        try:
            key = tuple(lk[config[n]] for lk, n in zip(self._lookup, self.names))
            return self._position[key]
        except (KeyError, TypeError):
            raise ValueError(f"{dict(config)} is not a recorded config of {self.dataset.name}") from None

    def __contains__(self, config: Mapping[str, Any]) -> bool:
        try:
            self.index(config)
            return True
        except ValueError:
            return False

    def sample(self, n: int, seed: int | None = None) -> list[dict[str, Any]]:
        rng = np.random.default_rng(seed)
        return [self[int(i)] for i in rng.permutation(len(self))[:n]]
