"""Search strategies, by name.

``make_strategy(name, space, seed, budget_hint)`` builds one; ``STRATEGIES`` lists the
names. Every strategy follows the ask/tell contract of ``base.Strategy``.
"""

from __future__ import annotations

from typing import Callable

from ..errors import MissingDependency, UnknownStrategy
from ..warm.prior import Prior, Source
from .base import Budget, NoBudget, SearchSpace, Strategy, config_key, require_budget, space_size

# name -> (module, class); imported on use, so that optuna loads only for "bayes".
_REGISTRY: dict[str, tuple[str, str]] = {
    "auto": ("auto", "AutoStrategy"),
    "grid": ("grid", "GridStrategy"),
    "phased": ("phased", "PhasedStrategy"),
    "random": ("random", "RandomStrategy"),
    "bayes": ("bayes", "BayesStrategy"),
    "surrogate": ("surrogate", "SurrogateStrategy"),
}
STRATEGIES: tuple[str, ...] = tuple(_REGISTRY)
DEFAULT = "auto"
SEARCHER = "surrogate"  # what auto runs when the budget does not cover the space (strategies/auto.py)
# name -> (module, extra): an optional package a strategy needs
_NEEDS: dict[str, tuple[str, str]] = {"bayes": ("optuna", "bayes")}


def missing(name: str) -> MissingDependency | None:
    """What strategy ``name`` needs and is not installed (looked up, not imported), or None."""
    import importlib.util

    if name in _NEEDS and importlib.util.find_spec(_NEEDS[name][0]) is None:
        module, extra = _NEEDS[name]
        return MissingDependency(module, extra, f"the '{name}' strategy")
    return None


def _class(name: str) -> Callable[..., Strategy]:
    import importlib

    if name not in _REGISTRY:
        raise UnknownStrategy(f"unknown strategy '{name}': choose one of {', '.join(STRATEGIES)}")
    module, cls = _REGISTRY[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


def make_strategy(name: str, space: SearchSpace, seed: int = 0, budget_hint: int | None = None,
                  prior: Prior | None = None) -> Strategy:
    """A new strategy searching ``space``; ``budget_hint`` is the evaluation budget, if known
    (at least the space's size: no budget stops the search before the space is done, which a
    space of more than 2**63 - 1 configs refuses in one line: ``NoBudget``). ``prior``: the
    results of earlier searches of the same kernel to start from (warm start); without one
    (or an empty one) the search is exactly the cold one."""
    cls = _class(name)
    require_budget(space, budget_hint)
    prior = prior if prior else None
    if name == "auto":
        return cls(space, seed=seed, budget_hint=budget_hint, prior=prior)
    if prior is None:
        return cls(space, seed=seed)
    if name == "surrogate":
        return cls(space, seed=seed, prior=prior)
    from .seeded import Seeded

    return Seeded(cls(space, seed=seed), prior)


def choose(space_size: int, budget_hint: int | None) -> str:
    """The strategy ``auto`` runs for a space of this size and this budget."""
    return "grid" if budget_hint is not None and budget_hint >= space_size else SEARCHER


def run_key(name: str, space_size: int, budget: int | None) -> str:
    """What a strategy actually runs for this budget: runs with equal keys make the same
    proposals (the benchmark shares them between budgets)."""
    return choose(space_size, budget) if name == "auto" else name


__all__ = ["Budget", "NoBudget", "Prior", "Source", "SearchSpace", "Strategy", "config_key", "make_strategy", "run_key", "space_size",
           "STRATEGIES", "DEFAULT"]
