"""Effort presets: a strategy and a budget for a space, from its size and what it costs.

``--effort quick|default|full`` stands for the budgets the strategy benchmark supports
(docs/benchmarks.md): cold, the default strategy is within a few per cent of the optimum
after 25 evaluations on average and reaches it after 100–200; warm-started (a prior from
another GPU or shape), after a third to a half of that. A preset evaluates every config
(``grid``) when that is no more than its budget, or when the whole space is expected to
take no longer than the preset allows (``exhaustive_seconds``, when the cost is known);
otherwise ``auto`` with the preset's budget. A whole space that a time limit or a patience
may end first is left to ``auto``, which then orders it by promise: a grid cut short
evaluates the space's first configs.
"""

from __future__ import annotations

from dataclasses import dataclass

EFFORTS = ("quick", "default", "full")


@dataclass(frozen=True)
class Preset:
    cold: int  # evaluations per shape × variant without a prior
    warm: int  # with one
    grid_within: float  # seconds: an exhaustive sweep expected to take no longer is run whole


PRESETS = {
    "quick": Preset(cold=25, warm=15, grid_within=5 * 60),
    "default": Preset(cold=100, warm=50, grid_within=60 * 60),
    "full": Preset(cold=200, warm=100, grid_within=24 * 3600),
}


@dataclass(frozen=True)
class Effort:
    name: str
    strategy: str
    max_evals: int | None  # None: every config
    reason: str


def choose(name: str, space_size: int, warm: bool = False, exhaustive_seconds: float | None = None,
           budget: int | None = None, limited: bool = False) -> Effort:
    """The strategy and budget of preset ``name`` for a space of ``space_size`` valid configs
    (the largest of the sweep's shapes and variants); ``exhaustive_seconds``: the expected
    wall time of evaluating all of them, when known; ``budget``: the user's --max-evals, in
    place of the preset's (a grid cut short at it would sweep the space's first configs);
    ``limited``: a --time-limit or --patience may end the sweep (the same holds)."""
    if name not in PRESETS:
        raise ValueError(f"unknown effort '{name}': choose one of {', '.join(EFFORTS)}")
    preset = PRESETS[name]

    def whole(reason: str) -> Effort:
        if limited:
            return Effort(name, "auto", None, f"{reason}; searched in the order of promise, as --time-limit or "
                                              f"--patience may end it first")
        return Effort(name, "grid", None, reason)

    if budget is not None:
        if space_size <= budget:
            return whole(f"the space ({space_size:,} configs) is within --max-evals {budget}")
        start = "warm-started" if warm else "cold"
        return Effort(name, "auto", budget, f"your --max-evals, {start}, of {space_size:,} configs")
    budget = preset.warm if warm else preset.cold
    if space_size <= budget:
        return whole(f"the space ({space_size:,} configs) is within the budget of {budget}")
    if exhaustive_seconds is not None and exhaustive_seconds <= preset.grid_within:
        return whole(f"the whole space is expected to take no longer than {preset.grid_within / 60:.0f} min")
    start = "warm-started" if warm else "cold"
    return Effort(name, "auto", budget, f"{budget} evaluations ({start}) of {space_size:,} configs")
