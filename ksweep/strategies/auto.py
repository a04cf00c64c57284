"""The default strategy: exhaustive when the budget covers the space, else model-based.

With a budget at least the size of the space, ``grid`` evaluates everything and nothing
can do better. Otherwise ``surrogate`` (Gaussian-process expected improvement with local
steps and failure awareness), which beat every other searcher on the recorded datasets at
every budget measured (docs/benchmarks.md). The choice is ``strategies.choose``, which
``run_key`` asks too.
"""

from __future__ import annotations

from typing import Any, Mapping

from .base import SearchSpace, Strategy, space_size


class AutoStrategy(Strategy):
    name = "auto"

    def __init__(self, space: SearchSpace, seed: int = 0, budget_hint: int | None = None, prior=None):
        from . import choose, make_strategy

        super().__init__(space, seed)
        self.chosen = choose(space_size(space), budget_hint)
        self.inner = make_strategy(self.chosen, space, seed=seed, prior=prior)

    @property
    def label(self) -> str:
        return self.chosen

    @property
    def adaptive(self) -> bool:
        return self.inner.adaptive

    def phase_of(self, config: Mapping[str, Any]) -> str | None:
        return self.inner.phase_of(config)

    @property
    def warm_dropped(self) -> str | None:
        return self.inner.warm_dropped

    def ask(self, n: int = 1) -> list[dict[str, Any]]:
        out = super().ask(n)
        self.exhausted = self.exhausted or self.inner.exhausted
        return out

    def _propose(self, n: int) -> list[dict[str, Any]]:
        return self.inner.ask(n)

    def tell(self, config: Mapping[str, Any], value: float | None) -> None:
        super().tell(config, value)
        self.inner.tell(config, value)
