"""Name resolution: which names an expression or a Python constraint reads, whether each
exists where it is read, and the one "did you mean" of every message about a name."""

from __future__ import annotations

import difflib
from typing import Any, Iterable, Mapping, Sequence

from ..errors import SpecError
from .expr import FUNCTIONS


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to a misspelt name (one that differs only in case first), or
    None when none is close."""
    candidates = sorted(set(candidates))
    same = [c for c in candidates if c.lower() == name.lower()]
    if same:
        return same[0]
    close = difflib.get_close_matches(name, candidates, n=1)
    return close[0] if close else None


def unknown_name(name: str, visible: Iterable[str], label: str, key: str) -> SpecError:
    """'unknown name STAGE_BYTE — did you mean STAGE_BYTES?' as a SpecError of file and key."""
    close = did_you_mean(name, visible)
    hint = f" — did you mean {close}?" if close else ""
    return SpecError(f"unknown name {name}{hint}", path=label, key=key)


def resolve_names(
    param_names: Sequence[str],
    derived: Sequence[Any],  # spec/model.py's Derived records
    constraints: Sequence[Any],  # and Constraint records
    fixed: Mapping[str, Any],
    label: str,
) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Check every name expressions read; return the parameters each derived value and
    each constraint depends on (through derived values)."""
    params = set(param_names)
    derived_names = {d.name for d in derived}
    visible = [*param_names, *(d.name for d in derived), *fixed, *FUNCTIONS]
    derived_deps: dict[str, frozenset[str]] = {}
    for d in derived:
        deps: set[str] = set()
        for name in sorted(d.expr.names):
            if name in params:
                deps.add(name)
            elif name in derived_deps:
                deps |= derived_deps[name]
            elif name == d.name:
                raise SpecError("refers to itself", path=label, key=f"derived.{d.name}")
            elif name in derived_names:
                raise SpecError(
                    f"uses {name}, which is defined later; derived values are computed in order",
                    path=label, key=f"derived.{d.name}",
                )
            elif name not in fixed:
                raise unknown_name(name, visible, label, f"derived.{d.name}")
        derived_deps[d.name] = frozenset(deps)
    constraint_deps: dict[str, frozenset[str]] = {}
    for c in constraints:
        where = f"constraint '{c.name}'"
        if c.expr is not None:
            names = set(c.expr.names)
        elif c.uses is not None:
            names = set(c.uses)
        elif c.function.takes_config():
            names = params | derived_names
        else:
            candidates = [*param_names, *derived_names, *fixed]
            names = {match_arg(a, candidates, c, label) for a in c.function.arg_names()}
        deps = set()
        for name in sorted(names):
            if name in params:
                deps.add(name)
            elif name in derived_deps:
                deps |= derived_deps[name]
            elif name not in fixed:
                raise unknown_name(name, visible, label, where)
        constraint_deps[c.name] = frozenset(deps)
    return derived_deps, constraint_deps


def match_arg(arg: str, candidates: Sequence[str], c: Any, label: str) -> str:
    """The name a Python constraint's argument stands for: exact, else case-insensitive."""
    if arg in candidates:
        return arg
    lowered = {n.lower(): n for n in candidates}
    if arg.lower() in lowered:
        return lowered[arg.lower()]
    close = did_you_mean(arg.upper(), candidates)
    hint = f" — did you mean {close}?" if close else ""
    raise SpecError(
        f"function argument '{arg}' matches no parameter, derived value or constant{hint}",
        path=label, key=f"constraint '{c.name}'",
    )
