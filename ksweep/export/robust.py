"""Configs that travel (pure): between the GPU models of a database, and over its shapes.

- ``portability``: the portability matrix of each shape × variant: each GPU model's best
  config, its loss on every other model that measured it (None: never measured there).
- ``portable_models``: per shape × variant, the model whose best loses least on the others
  at worst (the config a GPU model never tuned on falls back to).
- ``robust``: per variant, one config per shape for every GPU model, chosen so that the
  worst loss over the shapes and the models is the least it can be, and of those choices
  the fewest distinct configs (export/cover.py's exact set cover at that loss), each shape
  served by the one that loses least on it. With one GPU model the least worst loss is 0:
  each shape's own best, shapes that share one sharing it. Beside them, the one config
  that would serve every shape and model with the least worst loss (``Single``): what a
  library that ships one config gives up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from .cover import cover

Key = tuple  # (variant, shape, GPU model)


def loss(value: float, best: float, direction: str) -> float:
    """How much worse ``value`` is than ``best``, as a fraction of it (negative: better)."""
    if value == best:
        return 0.0
    worse, better = (value, best) if direction == "min" else (best, value)
    if better <= 0:
        return float("inf") if worse > better else float("-inf")
    return worse / better - 1.0


_loss = loss


def portability(values: Mapping[Key, Mapping], bests: Mapping[Key, str], direction: str
                ) -> dict[tuple[str, str], dict]:
    """(variant, shape) -> {model A: {model B: loss of A's best on B, None where B never
    measured it}}, for the shapes measured on several GPU models."""
    out: dict[tuple[str, str], dict] = {}
    for (variant, shape, model) in values:
        out.setdefault((variant, shape), {})[model] = {}
    for pair, row in list(out.items()):
        models = list(row)
        if len(models) < 2:
            del out[pair]
            continue
        for a in models:
            cid = bests[(*pair, a)]
            for b in models:
                there = values[(*pair, b)]
                ref = there[bests[(*pair, b)]][1]
                row[a][b] = _loss(there[cid][1], ref, direction) if cid in there else None
    return out


def worst(row: Mapping) -> float:
    """The worst loss of one model's best over the other models (an unmeasured one: inf)."""
    return max((math.inf if x is None else x for x in row.values()), default=0.0)


def portable_models(matrix: Mapping[tuple[str, str], dict]) -> dict[tuple[str, str], object]:
    """(variant, shape) -> the GPU model whose best loses least at worst on the others (of
    two alike, the first)."""
    return {pair: min(rows, key=lambda a: worst(rows[a])) for pair, rows in matrix.items()}


@dataclass(frozen=True)
class Single:
    """The one config of a variant with the least worst loss over all its shapes and models."""

    config: str  # its config id
    worst: float  # its worst loss (a fraction, never below 0)
    shape: str  # the shape where it loses that
    gpu: str | None = None  # and the GPU model


@dataclass(frozen=True)
class Robust:
    chosen: dict  # (variant, shape, model) -> config id
    worst: dict  # variant -> the least worst loss over its shapes and models
    exact: bool  # the cover is a proven minimum
    notes: list = field(default_factory=list)


def robust(values: Mapping[Key, Mapping], bests: Mapping[Key, str], direction: str,
           tolerance: float = 0.0) -> Robust:
    """The robust configs (the module's doc); ``tolerance``: a loss (a fraction) every shape
    may have anyway, when it is above the least worst loss (``--cover`` with ``--robust``)."""
    shapes: dict[str, dict[str, list]] = {}  # variant -> shape -> its models
    for variant, shape, model in values:
        shapes.setdefault(variant, {}).setdefault(shape, []).append(model)
    chosen, worst_of, exact, notes = {}, {}, True, []
    for variant, by_shape in shapes.items():
        losses: dict[str, dict[str, float]] = {}  # config id -> shape -> its worst loss over the models
        for shape, models in by_shape.items():
            everywhere = _candidates(values, bests, direction, variant, shape, models)
            if not everywhere:  # no config measured on every model: those measured on the most
                most = max(sum(cid in values[(variant, shape, m)] for m in models)
                           for m0 in models for cid in values[(variant, shape, m0)])
                everywhere = _candidates(values, bests, direction, variant, shape, models, most)
            for cid, x in everywhere.items():
                losses.setdefault(cid, {})[shape] = x
        least = max(min(row[shape] for row in losses.values() if shape in row) for shape in by_shape)
        worst_of[variant] = least
        limit = max(least, tolerance) + 1e-12
        found = cover({cid: {s: x for s, x in row.items() if x <= limit} for cid, row in losses.items()},
                      list(by_shape))
        exact = exact and found.exact
        for shape, cid in found.assignment.items():
            for model in by_shape[shape]:
                there = values[(variant, shape, model)]
                chosen[(variant, shape, model)] = cid if cid in there else bests[(variant, shape, model)]
                if cid not in there:
                    notes.append(f"shape {shape} (variant {variant}): no config was measured on every GPU model; "
                                 f"{model} keeps its own best")
    return Robust(chosen, worst_of, exact, notes)


def single(values: Mapping[Key, Mapping], bests: Mapping[Key, str], direction: str) -> dict[str, Single]:
    """variant -> the one config measured on every shape and GPU model of it whose worst loss
    is least (of two alike, the first found); a variant with no such config has none. Meant
    for every config's value (``Standing.value(singles=True)``): a config far from a shape's
    leaders is measured there once, and that once says what it loses."""
    out = {}
    keys: dict[str, list] = {}
    for key in values:
        keys.setdefault(key[0], []).append(key)
    for variant, mine in keys.items():
        worst: dict[str, tuple[float, str]] = {}
        for cid in dict.fromkeys(c for k in mine for c in values[k]):
            if not all(cid in values[k] for k in mine):
                continue
            # a single measurement that beats the best's confirmed median is within the noise
            # the confirmation judged: it loses nothing there, it does not gain
            at = [(max(0.0, _loss(values[k][cid][1], values[k][bests[k]][1], direction)), k[1], k[2]) for k in mine]
            worst[cid] = max(at, key=lambda t: t[0])
        if worst:
            cid = min(worst, key=lambda c: worst[c][0])
            out[variant] = Single(cid, *worst[cid])
    return out


def _candidates(values, bests, direction, variant, shape, models, least: int | None = None) -> dict[str, float]:
    """config id -> its worst loss over the models, of the configs measured on every model
    (with ``least``: on at least that many, the worst over those)."""
    need = len(models) if least is None else least
    out: dict[str, float] = {}
    ids = dict.fromkeys(cid for m in models for cid in values[(variant, shape, m)])
    for cid in ids:
        per = []
        for m in models:
            there = values[(variant, shape, m)]
            if cid in there:
                per.append(_loss(there[cid][1], there[bests[(variant, shape, m)]][1], direction))
        if len(per) >= need:
            out[cid] = max(per)
    return out
