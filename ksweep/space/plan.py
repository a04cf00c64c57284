"""What a sweep will do, before anything is compiled: counts per shape × variant.

A config is counted under the first constraint it fails, in spec order. The count that
constraint k prunes is N(C1..C(k-1)) − N(C1..Ck), where N(S) is the number of configs
that pass every constraint of S; each N is counted group by group without keeping rows,
so even a raw product over 1e12 plans without being materialised.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..spec.model import SpaceParts, Spec
from .space import Space


@dataclass(frozen=True)
class PlanEntry:
    shape: str
    variant: str
    total: int
    valid: int
    pruned: dict[str, int]
    examples: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = ()  # (params, derived)

    def to_json(self) -> dict:
        return {
            "shape": self.shape, "variant": self.variant, "total": self.total, "valid": self.valid,
            "pruned": self.pruned,
            "examples": [{"params": p, "derived": d} for p, d in self.examples],
        }


@dataclass(frozen=True)
class Plan:
    entries: tuple[PlanEntry, ...]
    constraint_order: tuple[str, ...] = field(default=())

    @property
    def total(self) -> int:
        return sum(e.total for e in self.entries)

    @property
    def valid(self) -> int:
        return sum(e.valid for e in self.entries)

    @property
    def pruned(self) -> dict[str, int]:
        out = {name: 0 for name in self.constraint_order}
        for e in self.entries:
            for name, n in e.pruned.items():
                out[name] = out.get(name, 0) + n
        return out

    def to_json(self) -> dict:
        return {
            "total": self.total, "valid": self.valid, "pruned": self.pruned,
            "entries": [e.to_json() for e in self.entries],
        }


def count_pruned(parts: SpaceParts, show: int = 0) -> tuple[int, int, dict[str, int], tuple]:
    """(raw, valid, pruned-by-first-failed-constraint, examples) of one space definition."""
    constraints = parts.constraints
    counts = []
    for k in range(len(constraints) + 1):
        sub = Space.from_record(replace(parts, constraints=constraints[:k]), count_only=True)
        counts.append(sub.size)
    pruned = {c.name: counts[k] - counts[k + 1] for k, c in enumerate(constraints)}
    examples: tuple = ()
    if show > 0 and counts[-1] > 0:
        space = Space.from_record(parts)
        examples = tuple((space[i], space.derive(space[i])) for i in range(min(show, space.size)))
    return counts[0], counts[-1], pruned, examples


def make_plan(spec: Spec, show: int = 0) -> Plan:
    """Counts of every shape × variant of a spec, with ``show`` valid configs of each."""
    entries = []
    for shape in spec.shape_list():
        for variant in spec.variant_list():
            parts = spec.space_parts(shape, variant)
            total, valid, pruned, examples = count_pruned(parts, show)
            entries.append(PlanEntry(shape.name, variant.name, total, valid, pruned, examples))
    return Plan(tuple(entries), tuple(c.name for c in spec.constraints))
