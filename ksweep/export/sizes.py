"""The sizes of the tuned shapes, and sizes asked for (pure): what a size selector reasons over.

A sweep keeps each shape's ``[shapes.NAME]`` defines and run arguments (``Store.shape_sizes``).
A shape's *sizes* are the numbers among them, by name:

- each define whose value is a number (``GEMM_M = 4096``), under its own name;
- each run argument that is a number and is not, at every tuned shape, the value of one
  define (``args = ["4096", "8"]`` beside ``GEMM_M = 4096``: the first is GEMM_M again; of
  several defines alike, the first that no earlier argument is), as ``ARG<i>``, i its
  position from 0.

A size is one of the selector's only when every tuned shape has it. Sizes asked for are
``NAME=VALUE`` words (``N=3000``, or several in one word: ``M=1024,N=2048``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..errors import ExportError
from ..spec.names import did_you_mean


def number(value: Any) -> float | None:
    """A size's value as a finite float: an int or a float (not a bool), or a text that reads
    as one; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        try:
            x = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Sizes:
    """The sizes of the tuned shapes: ``names`` in order, ``of[shape][name]`` their values;
    ``args[i]``, how run argument i of a shape is made from its sizes (a size's name, or
    None where it is the same text at every tuned shape); ``defines``, the names that are
    defines (the others are ``ARG<i>``)."""

    names: tuple[str, ...]
    of: Mapping[str, Mapping[str, float]]
    args: tuple[str | None, ...] = ()
    defines: frozenset[str] = frozenset()
    texts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # shape -> {"defines", "args"} as stored

    def range(self, name: str) -> tuple[float, float]:
        values = [v[name] for v in self.of.values()]
        return min(values), max(values)

    def varies(self, name: str) -> bool:
        lo, hi = self.range(name)
        return lo != hi


def sizes_of(stored: Mapping[str, Mapping[str, Any]], shapes: Sequence[str]) -> Sizes:
    """The sizes of ``shapes`` from what the store kept of each (``{"defines": ..., "args":
    ...}``); ExportError naming the shapes it has nothing for."""
    missing = [s for s in shapes if s not in stored]
    if missing:
        raise ExportError(f"the database keeps no sizes of shape{'s' * (len(missing) > 1)} "
                          f"{', '.join(missing[:6])}: swept by a ksweep that did not keep them (sweep them "
                          f"again, or give --spec the spec they were swept with)")
    defines = {s: {k: number(v) for k, v in (stored[s].get("defines") or {}).items()} for s in shapes}
    args = {s: [str(a) for a in stored[s].get("args") or ()] for s in shapes}
    names = [n for n in dict.fromkeys(k for s in shapes for k in defines[s])
             if all(defines[s].get(n) is not None for s in shapes)]
    of: dict[str, dict[str, float]] = {s: {n: defines[s][n] for n in names} for s in shapes}
    made: list[str | None] = []
    for i in range(max((len(a) for a in args.values()), default=0)):
        texts = [args[s][i] if i < len(args[s]) else None for s in shapes]
        values = [number(t) if t is not None else None for t in texts]
        same = [n for n in names if all(v is not None and v == of[s][n] for s, v in zip(shapes, values))]
        if same:  # a define's value again (one no earlier argument was): no size of its own
            made.append(next((n for n in same if n not in made), same[0]))
        elif all(v is not None for v in values):
            name = f"ARG{i}"
            made.append(name)
            for s, v in zip(shapes, values):
                of[s][name] = v
        else:
            made.append(None)
    ordered = tuple(names) + tuple(n for n in made if n is not None and n not in names)
    return Sizes(ordered, {s: {n: of[s][n] for n in ordered} for s in shapes}, tuple(made), frozenset(names),
                 {s: stored[s] for s in shapes})


_WORD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S+)\s*$")


def parse_sizes(words: Iterable[str], option: str = "--size") -> dict[str, float]:
    """``N=3000`` words (several in one, comma-separated) as name -> value; one line
    (ExportError) for a word that is no ``NAME=NUMBER`` or a name given twice."""
    out: dict[str, float] = {}
    for word in words:
        for part in str(word).split(","):
            if not part.strip():
                continue
            m = _WORD.match(part)
            value = number(m.group(2)) if m else None
            if value is None:
                raise ExportError(f"{option} {word}: give sizes as NAME=NUMBER (e.g. N=3000, or M=1024,N=2048)")
            if m.group(1) in out:
                raise ExportError(f"{option} {word}: {m.group(1)} is given twice")
            out[m.group(1)] = value
    return out


def completed(asked: Mapping[str, float], sizes: Sizes) -> tuple[dict[str, float], list[str]]:
    """Every size of the selector for ``asked``: a size every tuned shape has alike may be left
    out (it is taken at that value, said in the notes); ExportError for a name that is no
    size or a size that differs between the tuned shapes and is not given."""
    for name in asked:
        if name not in sizes.names:
            close = did_you_mean(name, list(sizes.names))
            raise ExportError(f"--size {name}: no size of that name (the tuned shapes' sizes: "
                              f"{', '.join(sizes.names) or 'none'})" + (f" — did you mean {close}?" if close else ""))
    out, notes = {}, []
    for name in sizes.names:
        if name in asked:
            out[name] = asked[name]
            continue
        lo, hi = sizes.range(name)
        if lo != hi:
            raise ExportError(f"give --size {name}=...: it differs between the tuned shapes "
                              f"({_num(lo)}–{_num(hi)})")
        out[name] = lo
        notes.append(f"{name} not given: taken as {_num(lo)}, its value at every tuned shape")
    return out, notes


def shape_of(sizes: Sizes, template: str, values: Mapping[str, float]) -> tuple[dict[str, Any], list[str]]:
    """The defines and run arguments of a shape at ``values``, made from the tuned shape
    ``template``: its defines with each size replaced, its run arguments with each that is a
    size (or a define's value) written anew."""
    stored = sizes.texts[template]
    defines = dict(stored.get("defines") or {})
    for name in sizes.defines:
        if name in values:
            old = defines.get(name)
            defines[name] = _like(values[name], old)
    args = [str(a) for a in stored.get("args") or ()]
    for i, name in enumerate(sizes.args):
        if name is not None and i < len(args) and name in values:
            args[i] = str(_like(values[name], number(args[i])))
    return defines, args


def _like(value: float, old: Any):
    """``value`` as an int where it is whole and the tuned value was a whole number too."""
    whole = isinstance(old, int) or (isinstance(old, float) and old.is_integer())
    return int(value) if whole and float(value).is_integer() else value


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def text(values: Mapping[str, float]) -> str:
    """``M=1024 N=2048``."""
    return " ".join(f"{k}={_num(v)}" for k, v in values.items())
