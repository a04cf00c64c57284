"""Phased search (seed 000's plan): Tier-1 grid first, then Tier-2 switches on its winner.

Phase ``tier1``: every valid combination of the Tier-1 parameters, with the Tier-2
switches at their defaults (a combination that is invalid with the defaults is skipped).
Phase ``tier2``: the Tier-1 values of the phase-1 winner, with every valid combination of
the switches. Tier-3 variants are separate spaces; the driver runs this strategy on each.

Phase 2 needs phase 1's winner, so once phase 1 is all proposed ``ask`` returns nothing
until every phase-1 result is in. ``phase_of(config)`` says which phase proposed a config,
so that a report can print one table per phase.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping

from .base import SearchSpace, Strategy, config_key


class PhasedStrategy(Strategy):
    name = "phased"

    def __init__(self, space: SearchSpace, seed: int = 0):
        super().__init__(space, seed)
        self._tier2 = [p for p in space.params if getattr(p, "tier", 1) == 2]
        self._phase1 = self._phase1_configs()
        self._phase1_done = False  # every phase-1 config proposed
        self._phase2: Iterator[dict[str, Any]] | None = None
        self._phase: dict[tuple, str] = {}
        self._waiting: set[tuple] = set()  # proposed phase-1 configs without a result yet

    def phase_of(self, config: Mapping[str, Any]) -> str | None:
        """"tier1" or "tier2": the phase that proposed this config (None: not proposed)."""
        return self._phase.get(config_key(config, self.space.names))

    @property
    def phase(self) -> str:
        return "tier2" if self._phase2 is not None else "tier1"

    def _phase1_configs(self) -> Iterator[dict[str, Any]]:
        defaults = {p.name: p.default for p in self._tier2}
        for config in self.space:
            if all(config[n] == v for n, v in defaults.items()):
                yield config

    def _phase2_configs(self, winner: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        names = [p.name for p in self._tier2]
        for values in itertools.product(*(p.values for p in self._tier2)):
            config = {n: winner[n] for n in self.space.names}
            config.update(zip(names, values))
            if config in self.space:
                yield config

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not self._phase1_done:
            for config in self._phase1:
                key = config_key(config, self.space.names)
                if key in self.proposed:  # told already (the driver's reference config): not awaited
                    continue
                self._phase[key] = "tier1"
                self._waiting.add(key)
                out.append(config)
                if len(out) == n:
                    return out
            self._phase1_done = True
        if self._phase2 is None:
            if self._waiting:
                return out  # phase 2 starts from phase 1's winner: wait for every result
            best = self.best
            if best is None or not self._tier2:
                self.exhausted = True
                return out
            self._phase2 = self._phase2_configs(best[0])
        for config in self._phase2:
            key = config_key(config, self.space.names)
            if key in self.proposed:
                continue
            self._phase[key] = "tier2"
            out.append(config)
            if len(out) == n:
                return out
        self.exhausted = True
        return out

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        super().tell(config, value)
        self._waiting.discard(config_key(config, self.space.names))
