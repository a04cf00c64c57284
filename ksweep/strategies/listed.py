"""The configs given, in order, and nothing else (``ksweep check``: the best known config
and the default, measured again)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .base import SearchSpace, Strategy


class ListedStrategy(Strategy):
    name = "listed"
    adaptive = False  # its order is fixed before any result

    def __init__(self, space: SearchSpace, configs: Sequence[Mapping[str, Any]], seed: int = 0):
        super().__init__(space, seed)
        self._configs = [dict(c) for c in configs if c in space]
        self._next = 0

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out = self._configs[self._next:self._next + n]
        self._next += len(out)
        if self._next >= len(self._configs):
            self.exhausted = True
        return out


class CrossStrategy(ListedStrategy):
    """``ksweep run --cross K``: the other shapes' best configs, measured at this shape once
    its own search is done; their results are stored as phase ``cross``."""

    name = "cross"

    def phase_of(self, config: Mapping[str, Any]) -> str | None:
        return "cross"
