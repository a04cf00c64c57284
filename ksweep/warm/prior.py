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

Pure data and pure functions: no file is read here (``warm/sources.py`` reads sources).
"""

from __future__ import annotations

import itertools
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
            out[p.name] = _default(p)
    return out


def switch_names(params: Sequence) -> tuple[str, ...]:
    """Target parameters that choose between code paths rather than sizes: two values (on/off,
    one layout or another), or values that are not all numbers."""
    return tuple(p.name for p in params
                 if len(p.values) == 2 or (len(p.values) > 2 and not all(_is_number(v) for v in p.values)))


SEED_WALK = 50_000  # mapped configs of one source looked at, at most, when choosing seeds


def seed_configs(prior: Prior, params: Sequence, contains, count: int, diverse: bool = True,
                 flips: bool = True) -> list[dict[str, Any]]:
    """The ``count`` configs a warm-started search tries first: the best configs of the
    sources mapped into the target space, distinct and valid there (``contains(config)``),
    taken from the sources in turn (the best of each, then the next of each, ...).

    ``diverse``: a switch (``switch_names``) that is best one way on the source may be best
    the other way on the target (a shared-memory path that pays on one GPU only), and the
    best configs of a source mostly share their switches. So after the best config of each
    source come (``flips``) that config with one switch changed at a time, which measures
    each switch on the target where the sources are best, then the best config the sources
    have for each combination of the switches' values not yet tried (in the order of those
    configs), then the next best configs. A switch that a source does not set is varied
    too, over the target's values (its default first), since the source says nothing of
    it. Without switches this is the plain order."""
    if count <= 0:
        return []
    names = [p.name for p in params]
    switches = switch_names(params) if diverse else ()
    per_source = [_seed_candidates(s, params, names, switches, contains, count) for s in prior.sources]
    out: list[dict[str, Any]] = []
    keys: set[tuple] = set()
    combos: set[tuple] = set()

    def take(key, combo, config, covers: bool = True) -> bool:
        if len(out) >= count or key in keys:
            return False
        keys.add(key)
        if covers:
            combos.add(combo)
        out.append(config)
        return True

    def in_turns(part: int, new_combo: bool, each: int | None = None) -> None:
        turns = [iter(lists[part]) for lists in per_source]
        rounds = 0
        while turns and len(out) < count and (each is None or rounds < each):
            alive = []
            for it in turns:
                for key, combo, config in it:
                    if not (new_combo and combo in combos) and take(key, combo, config):
                        alive.append(it)
                        break
            turns = alive
            rounds += 1

    if not switches:
        in_turns(2, False)
        return out
    in_turns(0, True, each=1)  # the best of each source
    if flips:
        by_name = {p.name: p for p in params}
        for best in list(out):
            for n in switches:
                for v in by_name[n].values:
                    if v != best[n]:
                        config = {**best, n: v}
                        if _contains(contains, config):  # it leaves its combination to the sources' best
                            take(tuple(config[m] for m in names), (), config, covers=False)
    in_turns(0, True)  # the best of each combination not yet tried
    in_turns(1, False)
    return out


def _seed_candidates(source: Source, params: Sequence, names: list[str], switches: Sequence[str], contains,
                     count: int) -> tuple[list, list, list]:
    """(the best mapped valid config of each switch combination, in the source's order; the
    other configs, best first, up to ``count``; both in the source's order) as (key,
    combination, config) triples."""
    have = set(source.names)
    by_name = {p.name: p for p in params}
    free = [n for n in switches if n not in have]  # switches the source never set: varied here
    variants = [dict(zip(free, vs)) for vs in itertools.product(*(_default_first(by_name[n]) for n in free))]
    firsts, rest = [], []
    order: dict[tuple, int] = {}  # every distinct mapped config looked at -> its place
    combos: set[tuple] = set()
    wanted = min(count, math.prod(len(by_name[n].values) for n in switches))
    looked = 0
    for i in source.ranked():
        mapped = map_config(source.configs[i], params)
        if mapped is None:
            continue
        for variant in variants:
            config = {**mapped, **variant}
            key = tuple(config[n] for n in names)
            looked += 1
            if key in order:
                continue
            order[key] = len(order)
            if not _contains(contains, config):
                continue
            combo = tuple(config[n] for n in switches)
            if combo in combos:
                if len(rest) < count:
                    rest.append((key, combo, config))
            else:
                combos.add(combo)
                firsts.append((key, combo, config))
        if (len(firsts) >= wanted and len(rest) >= count) or looked >= SEED_WALK:
            break
    both = sorted(firsts + rest, key=lambda t: order[t[0]])[:count]
    return firsts, rest, both


def _default(param):
    """A parameter's default where it is one of its values, else its first value."""
    default = getattr(param, "default", None)
    return default if default in param.values else param.values[0]


def _default_first(param) -> list:
    first = _default(param)
    return [first] + [v for v in param.values if v != first]


def _contains(contains, config) -> bool:
    try:
        return bool(contains(config))
    except (ValueError, KeyError, TypeError):
        return False


def common_names(source: Source, params: Sequence) -> tuple[str, ...]:
    """Target parameters (in target order) that the source sets."""
    have = set(source.names)
    return tuple(p.name for p in params if p.name in have)


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
