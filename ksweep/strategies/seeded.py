"""Warm start for strategies without a model: the sources' best configs first.

``Seeded`` wraps a strategy: it proposes the prior's best configs (mapped into the space,
valid there: ``prior.seed_configs``) before any other, tells their results to the wrapped
strategy as they come, and hands over once every one of them is told (until then ``ask``
returns only what is left of them), so the wrapped strategy never proposes a seed again.
``surrogate`` takes the prior itself (seeds, and the sources' results in its model).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..warm.prior import Prior, seed_configs
from .base import Strategy, config_key

SEEDS = 5


class Seeded(Strategy):
    def __init__(self, inner: Strategy, prior: Prior, seeds: int = SEEDS):
        super().__init__(inner.space, inner.seed)
        self.inner = inner
        self.name = inner.name
        self.prior = prior
        self._seeds = seed_configs(prior, inner.space.params, inner.space.__contains__, seeds)
        self._waiting = {config_key(c, self.space.names) for c in self._seeds}

    def phase_of(self, config: Mapping[str, Any]) -> str | None:
        if config_key(config, self.space.names) in {config_key(c, self.space.names) for c in self._seeds}:
            return "warm"
        return self.inner.phase_of(config)

    @property
    def label(self) -> str:
        return self.inner.label

    @property
    def adaptive(self) -> bool:  # its seeds are fixed before any result
        return self.inner.adaptive

    def ask(self, n: int = 1) -> list[dict[str, Any]]:
        out = super().ask(n)
        self.exhausted = self.exhausted or (not self._waiting and self.inner.exhausted)
        return out

    def _propose(self, n: int) -> list[dict[str, Any]]:
        fresh = [c for c in self._seeds if config_key(c, self.space.names) not in self.proposed]
        if fresh:
            return fresh[:n]
        if self._waiting:
            return []  # the wrapped strategy starts once every seed is told
        # The wrapped strategy may come upon seeds in its own order: it skips them (they were
        # told), which can leave one ask empty. Each such ask passes one seed at least.
        for _ in range(len(self._seeds) + 1):
            out = self.inner.ask(n)
            if out or self.inner.exhausted:
                return out
        return []

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        super().tell(config, value)
        self._waiting.discard(config_key(config, self.space.names))
        self.inner.tell(config, value)
