"""A small local search around one config (``ksweep select --validate``: is the selector's
choice the best near it?), not a strategy of ``--strategy``: it needs its start.

The start first; then, each round, every untried neighbour of the best config so far (each
parameter moved to the value next to its own in size, either side; a parameter whose values are
not all numbers, to each other value), valid in the space; when a round finds nothing
better than its centre, the search is done. Deterministic: no random numbers.
"""

from __future__ import annotations

from typing import Any, Mapping

from .base import SearchSpace, Strategy, config_key


class LocalSearch(Strategy):
    name = "local"

    def __init__(self, space: SearchSpace, start: Mapping[str, Any], seed: int = 0):
        super().__init__(space, seed)
        self.start = {n: start[n] for n in space.names}
        self._queue: list[dict[str, Any]] = [self.start] if self.start in space else []
        self._centre: tuple | None = None
        self._told: dict[tuple, float | None] = {}
        self.exhausted = not self._queue

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < n:
            fresh = [c for c in self._queue if config_key(c, self.space.names) not in self.proposed]
            self._queue = fresh
            if fresh:
                out.append(fresh.pop(0))
                self._queue = fresh
                continue
            if len(self._told) < len(self.proposed) or out:
                break  # a round ends once every config of it is told
            best = self._best()
            if best is None or best == self._centre:
                self.exhausted = True
                break
            self._centre = best
            self._queue = self._neighbours(dict(zip(self.space.names, best)))
            if not self._queue:
                self.exhausted = True
                break
        return out

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        super().tell(config, value)
        self._told[config_key(config, self.space.names)] = value

    def _best(self) -> tuple | None:
        ok = [(v, k) for k, v in self._told.items() if v is not None]
        if not ok:
            return None
        best_value = min(v for v, _ in ok)
        if self._centre is not None and self._told.get(self._centre) == best_value:
            return self._centre  # a tie keeps the centre: nothing better was found
        return next(k for v, k in ok if v == best_value)

    def _neighbours(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for p in self.space.params:
            values = list(p.values)
            if config[p.name] not in values:
                continue
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            values = sorted(values) if numeric else values
            i = values.index(config[p.name])
            others = [values[j] for j in (i - 1, i + 1) if 0 <= j < len(values)] if numeric else \
                [v for v in values if v != config[p.name]]
            for v in others:
                c = {**config, p.name: v}
                if config_key(c, self.space.names) not in self.proposed and c in self.space:
                    out.append(c)
        return out
