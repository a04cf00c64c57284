"""What earlier searches of the same kernel know: the prior of a warm-started search.

A *source* is the results of one earlier search: another shape, another GPU, another
revision of the source, or a recorded dataset of the same kernel. Its configs need not
belong to the space searched now. They are *mapped* into it by parameter name:

- a parameter the source has and the target lacks is dropped;
- a parameter the target has and the source lacks takes the target's default;
- a value the target's list lacks becomes the nearest value of that list (numbers: by the
  log of positive values, else by difference); a non-numeric value with no match makes
  the config unmappable (it is skipped).

A mapped config may still be invalid in the target space (a constraint that depends on the
shape, say): whoever uses the mapping checks ``config in space`` and skips those.

Pure data and pure functions: no file is read here (``ksweep.replay.warm`` reads sources).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np


@dataclass(frozen=True)
class Source:
    """Results of one earlier search: configs (name -> value) and the value each gave, to
    minimise (None: the config failed)."""

    label: str
    configs: tuple[Mapping[str, Any], ...]
    values: tuple[float | None, ...]

    def __post_init__(self):
        if len(self.configs) != len(self.values):
            raise ValueError("a source needs one value per config")

    @property
    def names(self) -> tuple[str, ...]:
        """Every parameter name that some config of the source sets, in first-seen order."""
        return tuple(dict.fromkeys(n for c in self.configs for n in c))

    @property
    def ok(self) -> int:
        return sum(v is not None for v in self.values)

    def ranked(self) -> list[int]:
        """Indices of the configs that did not fail, best first (ties: in recorded order)."""
        ok = [i for i, v in enumerate(self.values) if v is not None and math.isfinite(v)]
        return sorted(ok, key=lambda i: self.values[i])


@dataclass(frozen=True)
class Prior:
    """The sources a search starts from (several: each earlier shape of one run)."""

    sources: tuple[Source, ...] = ()

    def __bool__(self) -> bool:
        return any(s.ok for s in self.sources)

    def plus(self, source: Source) -> "Prior":
        return Prior((*self.sources, source))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in self.sources)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def map_value(value: Any, values: Sequence[Any]) -> tuple[bool, Any]:
    """(found, the value of ``values`` that stands for ``value``): itself when listed, else
    the nearest number (log scale when both are positive); (False, None) when nothing fits."""
    if value in values:
        return True, value
    if not _is_number(value):
        return False, None
    numbers = [v for v in values if _is_number(v)]
    if not numbers:
        return False, None

    def distance(v):
        if value > 0 and v > 0:
            return abs(math.log(v) - math.log(value))
        return abs(v - value) + 1e9  # below the log distance of any positive pair only when needed
    return True, min(numbers, key=distance)


def map_config(config: Mapping[str, Any], params: Sequence) -> dict[str, Any] | None:
    """``config`` of another space as a config of the target's parameters (``params``: the
    target's ``Param``s, in order), or None when one of its values has no counterpart."""
    out: dict[str, Any] = {}
    for p in params:
        if p.name in config:
            found, v = map_value(config[p.name], p.values)
            if not found:
                return None
            out[p.name] = v
        else:
            default = getattr(p, "default", None)
            out[p.name] = default if default in p.values else p.values[0]
    return out


def seed_configs(prior: Prior, params: Sequence, contains, count: int) -> list[dict[str, Any]]:
    """The ``count`` best configs of the sources mapped into the target space, distinct and
    valid there (``contains(config)``), taken from the sources in turn (the best of each,
    then the second best of each, ...)."""
    if count <= 0:
        return []
    names = [p.name for p in params]
    out: list[dict[str, Any]] = []
    seen: set[tuple] = set()

    def next_of(source: Source, order) -> dict[str, Any] | None:
        for i in order:
            mapped = map_config(source.configs[i], params)
            if mapped is None:
                continue
            key = tuple(mapped[n] for n in names)
            if key in seen:
                continue
            seen.add(key)
            if _contains(contains, mapped):
                return mapped
        return None

    turns = [(s, iter(s.ranked())) for s in prior.sources]
    while turns and len(out) < count:
        alive = []
        for source, order in turns:
            config = next_of(source, order)
            if config is None:
                continue  # this source has nothing more to give
            out.append(config)
            alive.append((source, order))
            if len(out) == count:
                break
        turns = alive
    return out


def _contains(contains, config) -> bool:
    try:
        return bool(contains(config))
    except (ValueError, KeyError, TypeError):
        return False


def common_names(prior: Prior, params: Sequence) -> tuple[str, ...]:
    """Target parameters (in target order) that every source sets."""
    names = [p.name for p in params]
    for s in prior.sources:
        have = set(s.names)
        names = [n for n in names if n in have]
    return tuple(names)


def observations(source: Source, params: Sequence, common: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """A source on the target's ``common`` parameters: (rows of target value indices, one
    column per common parameter; the best value of each row, NaN where every config mapped
    to it failed). Configs of the source that differ only in parameters the target lacks
    become one row: what the best of them gave."""
    common = list(common)
    by_name = {p.name: p for p in params}
    lookup = {n: {v: j for j, v in enumerate(by_name[n].values)} for n in common}
    best: dict[tuple, float] = {}
    for config, value in zip(source.configs, source.values):
        key = []
        for n in common:
            found, v = map_value(config.get(n), by_name[n].values)
            if not found:
                break
            key.append(lookup[n][v])
        else:
            key = tuple(key)
            v = np.nan if value is None or not math.isfinite(value) else float(value)
            old = best.get(key, np.nan)
            best[key] = v if np.isnan(old) else (old if np.isnan(v) else min(old, v))
    rows = np.array(list(best), dtype=np.int64).reshape(len(best), len(common))
    return rows, np.array(list(best.values()), dtype=np.float64)
